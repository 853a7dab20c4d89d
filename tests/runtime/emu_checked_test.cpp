// emu's checked mode (GDRT_EMU_CHECKED=1) reports work that reaches a block
// freed before it ran without waiting for its stream (GD004), and only that:
// a free on the work's own stream is ordered after it, as cudaFreeAsync is.
// Each test has its own emu index, read with the mode on, since errors stick.
// Whether work has run yet is decided by holding its stream (StreamHold),
// never by timing, so the deliberate races run in one order, which
// ThreadSanitizer sees as ordered (label emu_races).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "emu/emu_control.h"
#include "gdrt/gdrt.h"

namespace gdrt {
namespace {

Device checked_emu(int index) {
  ::setenv("GDRT_EMU_CHECKED", "1", 1);
  const Device device{DeviceKind::emu, index};
  backend(device);  // created, and its mode read, now
  ::unsetenv("GDRT_EMU_CHECKED");
  return device;
}

TEST(EmuChecked, SameStreamFreeAfterQueuedWorkIsNotReported) {
  const Device device = checked_emu(7);
  Generator g(2);
  const Tensor x = randn({64, 64}, g).to(device);
  Tensor out;
  {
    emu::StreamHold hold(device, 0);
    {
      Tensor tmp = mul(x, 2.0);
      out = exp(tmp);
    }  // tmp freed on stream 0 while exp, queued there, has not run
  }
  EXPECT_NO_THROW(synchronize(device));
  EXPECT_EQ(out.to(cpu_device()).numel(), 64 * 64);
}

TEST(EmuChecked, FreeThatDoesNotWaitForTheReadingStreamIsReported) {
  const Device device = checked_emu(8);
  Generator g(3);
  Tensor tmp = randn({64, 64}, g).to(device);
  // Non-blocking, as PyTorch makes its streams: a free on the legacy default
  // stream would otherwise wait for a blocking stream's earlier work.
  const Stream side = Stream::create(device, StreamFlags::non_blocking);
  Tensor out;
  {
    emu::StreamHold hold(device, side.id());
    {
      StreamGuard guard(side);
      out = exp(tmp);  // reads tmp on the side stream, once the hold is released
    }
    tmp = Tensor();  // freed on stream 0 without record_stream(side)
  }
  try {
    synchronize(device);
    ADD_FAILURE() << "the free did not wait for the side stream, yet nothing was reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GD004"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gdrt
