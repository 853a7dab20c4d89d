// What makes emu a GPU rather than a second cpu: each test here fails when
// the semantic it names is taken out of emu. Ordering is decided with
// StreamHold (a stream held at a gate), never with timings. These tests
// race on purpose (a read before the copy it reads), each in the one order
// the hold imposes, which ThreadSanitizer sees as ordered: a test that lets
// two streams run freely fails under it (scripts/sanitize.sh thread).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>

#include "emu/emu_control.h"
#include "gdrt/gdrt.h"
#include "test_support.h"

namespace gdrt {
namespace {

using emu::StreamHold;
using namespace std::chrono_literals;

// Runs `call` on another thread while a stream is held. A call that must
// not wait for the held stream returns soon (a generous 10 s is allowed, for
// loaded machines); one that must wait never returns until the hold is
// released, so a short grace period shows it did not, and a wrong one
// returns at once. Neither wait decides anything in a passing run.
template <class F>
bool returns_while_held(F call, std::future<void>& pending) {
  pending = std::async(std::launch::async, std::move(call));
  return pending.wait_for(10s) == std::future_status::ready;
}
template <class F>
bool waits_while_held(F call, std::future<void>& pending) {
  pending = std::async(std::launch::async, std::move(call));
  return pending.wait_for(300ms) != std::future_status::ready;
}

Tensor filled(std::int64_t n, double value) {
  Tensor t = full({n}, value, TensorOptions{}.with_device(test::emu_device()));
  synchronize(test::emu_device());
  return t;
}

bool all_equal(const std::vector<float>& v, float x) {
  for (float f : v)
    if (!(f == x)) return false;
  return true;
}

TEST(EmuSemantics, AnAsyncCopyToPinnedMemoryReturnsBeforeItRuns) {
  Tensor d = filled(1024, 7.0);
  Tensor host;
  {
    StreamHold hold(test::emu_device(), 0);
    std::future<void> pending;
    EXPECT_TRUE(returns_while_held([&] { host = d.to(cpu_device(), /*non_blocking=*/true); }, pending));
    hold.release();
    pending.get();
  }
  EXPECT_TRUE(host.is_pinned());
  synchronize(test::emu_device());
  EXPECT_TRUE(all_equal(host.to_vector<float>(), 7.0f));
}

// Asked to be asynchronous (non_blocking), a copy from pageable memory still
// returns only once it, and the work queued before it, is done.
TEST(EmuSemantics, ACopyWithPageableMemoryReturnsOnlyWhenDone) {
  Tensor pageable = full({1024}, 7.0);
  ASSERT_FALSE(pageable.is_pinned());
  StreamHold hold(test::emu_device(), 0);
  std::future<void> pending;
  Tensor d;
  EXPECT_TRUE(waits_while_held([&] { d = pageable.to(test::emu_device(), /*non_blocking=*/true); }, pending));
  hold.release();
  pending.get();
  EXPECT_TRUE(all_equal(d.to_vector<float>(), 7.0f));
}

TEST(EmuSemantics, ReadingAPinnedDestinationBeforeTheSyncSeesStaleData) {
  // A value no other test copies: pinned buffers are reused, and stale data
  // from an earlier copy of the same value would look fresh.
  Tensor d = filled(1024, 41.0);
  std::future<void> pending;  // outlives the hold: a wrongly blocking copy ends once it is released
  Tensor early;
  std::vector<float> seen;
  {
    StreamHold hold(test::emu_device(), 0);
    ASSERT_TRUE(returns_while_held([&] { early = d.to(cpu_device(), /*non_blocking=*/true); }, pending));
    seen = early.to_vector<float>();  // a host read: no wait
  }
  synchronize(test::emu_device());
  EXPECT_FALSE(all_equal(seen, 41.0f)) << "the copy had already landed before the stream ran it";
  EXPECT_TRUE(all_equal(early.to_vector<float>(), 41.0f));
}

TEST(EmuSemantics, NewDeviceMemoryReadsAsNaN) {
  Tensor t = empty({64}, TensorOptions{}.with_device(test::emu_device()));
  for (float v : t.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

// A freed block is poisoned before it is handed out again, so a program that
// reads a new tensor before writing it sees NaN, never the last owner's data.
TEST(EmuSemantics, AReusedBlockReadsAsNaNNotItsOldContents) {
  const TensorOptions on_emu = TensorOptions{}.with_device(test::emu_device());
  const void* block = nullptr;
  {
    Tensor old = full({64}, 42.0, on_emu);
    synchronize(test::emu_device());
    block = old.data_ptr();
  }
  Tensor reused = empty({64}, on_emu);
  ASSERT_EQ(reused.data_ptr(), block) << "the allocator did not hand the freed block out again";
  for (float v : reused.to_vector<float>()) EXPECT_TRUE(std::isnan(v)) << v;
}

// A tensor made on the default stream, read by a kernel queued on a side
// stream (non-blocking, as PyTorch creates its streams), then dropped: its
// block goes back to the default stream at once and the next allocation
// there overwrites what the side stream has yet to read.
struct SideStreamRead {
  std::vector<float> values;  // what the side stream computed from x
  bool block_came_back;       // the next allocation on x's stream got x's block
};

SideStreamRead side_stream_read_after_free(bool record_stream) {
  const Device dev = test::emu_device();
  Stream side = Stream::create(dev, StreamFlags::non_blocking);
  Tensor result;
  bool came_back = false;
  {
    Tensor x = full({4096}, 1.0, TensorOptions{}.with_device(dev));
    const void* block = x.data_ptr();
    StreamHold hold(dev, side.id());
    {
      StreamGuard on_side(side);
      result = mul(x, 2.0);
    }
    if (record_stream) x.record_stream(side);
    x = Tensor();                                                     // freed on the default stream
    Tensor reuse = full({4096}, 5.0, TensorOptions{}.with_device(dev));  // the next allocation there
    came_back = reuse.data_ptr() == block;
    Stream(dev).synchronize();
    hold.release();
    side.synchronize();
  }
  return {result.to_vector<float>(), came_back};
}

// Measured on an H100: the block of a stream-ordered free came straight back
// to the next allocation on the freeing stream, 10 times in 10.
TEST(EmuSemantics, FreeingATensorAnotherStreamStillReadsCorruptsIt) {
  const SideStreamRead r = side_stream_read_after_free(false);
  EXPECT_TRUE(r.block_came_back);
  EXPECT_FALSE(all_equal(r.values, 2.0f));
}

TEST(EmuSemantics, RecordStreamKeepsTheBlockUntilTheOtherStreamIsDone) {
  const SideStreamRead r = side_stream_read_after_free(true);
  EXPECT_FALSE(r.block_came_back);
  EXPECT_TRUE(all_equal(r.values, 2.0f));
}

TEST(EmuSemantics, ATensorMadeOnAStreamMayOutliveTheStream) {
  const Device dev = test::emu_device();
  Tensor kept;
  {
    Stream s = Stream::create(dev, StreamFlags::non_blocking);
    StreamGuard g(s);
    kept = full({64}, 2.0, TensorOptions{}.with_device(dev));
  }  // the stream is destroyed; its tensor lives on
  EXPECT_TRUE(all_equal(kept.to_vector<float>(), 2.0f));
  kept = Tensor();  // freed on a stream that no longer exists
  EXPECT_TRUE(all_equal(filled(64, 3.0).to_vector<float>(), 3.0f));
}

TEST(EmuSemantics, AnEventOrdersTwoStreams) {
  const Device dev = test::emu_device();
  Stream producer = Stream::create(dev, StreamFlags::non_blocking);
  Stream consumer = Stream::create(dev, StreamFlags::non_blocking);
  Tensor a = empty({256}, TensorOptions{}.with_device(dev)), with_event, without_event;
  synchronize(dev);
  {
    StreamHold hold(dev, producer.id());
    Event written;
    {
      StreamGuard g(producer);
      a.fill_(3.0);
      written = producer.record();
    }
    {
      StreamGuard g(consumer);
      without_event = add(a, 1.0);
    }
    const Event before_the_wait = consumer.record();
    consumer.wait(written);
    {
      StreamGuard g(consumer);
      with_event = add(a, 1.0);
    }
    before_the_wait.synchronize();  // returns: only the work after the wait is held
    EXPECT_FALSE(all_equal(without_event.to_vector<float>(), 4.0f));
  }
  consumer.synchronize();
  EXPECT_TRUE(all_equal(with_event.to_vector<float>(), 4.0f));
}

// cudaStreamWaitEvent then cudaEventRecord, with no work between: the
// second event still comes after what the first one marked.
TEST(EmuSemantics, AnEventRecordedRightAfterAWaitCarriesTheWait) {
  const Device dev = test::emu_device();
  Stream producer = Stream::create(dev, StreamFlags::non_blocking);
  Stream relay = Stream::create(dev, StreamFlags::non_blocking);
  Tensor a = empty({256}, TensorOptions{}.with_device(dev)), b;
  synchronize(dev);
  {
    StreamHold hold(dev, producer.id());
    {
      StreamGuard g(producer);
      a.fill_(3.0);
    }
    relay.wait(producer.record());
    Stream(dev).wait(relay.record());
    b = add(a, 1.0);  // on the default stream
  }
  synchronize(dev);
  EXPECT_TRUE(all_equal(b.to_vector<float>(), 4.0f));
}

TEST(EmuSemantics, ABlockingStreamWaitsForTheLegacyDefaultStreamAndANonBlockingOneDoesNot) {
  const Device dev = test::emu_device();
  Stream blocking = Stream::create(dev, StreamFlags::blocking);
  Stream non_blocking = Stream::create(dev, StreamFlags::non_blocking);
  Tensor a = empty({256}, TensorOptions{}.with_device(dev));
  synchronize(dev);
  StreamHold hold(dev, 0);
  a.fill_(3.0);  // queued on the held default stream
  Tensor from_blocking, from_non_blocking;
  {
    StreamGuard g(blocking);
    from_blocking = add(a, 1.0);
  }
  {
    StreamGuard g(non_blocking);
    from_non_blocking = add(a, 1.0);
  }
  std::future<void> waiting;
  EXPECT_TRUE(returns_while_held([&] { non_blocking.synchronize(); }, waiting));
  std::future<void> blocked;
  EXPECT_TRUE(waits_while_held([&] { blocking.synchronize(); }, blocked));
  hold.release();
  blocked.get();
  EXPECT_TRUE(all_equal(from_blocking.to_vector<float>(), 4.0f));
  EXPECT_FALSE(all_equal(from_non_blocking.to_vector<float>(), 4.0f));
}

TEST(EmuSemantics, TheDataLoaderStagesBatchesThroughPinnedMemory) {
  struct Ramp final : data::Dataset {
    std::int64_t size() const override { return 8; }
    data::Example get(std::int64_t i) const override {
      return {full({4}, static_cast<double>(i)), full({1}, static_cast<double>(i))};
    }
  };
  data::LoaderOptions o;
  o.batch_size = 4;
  o.pin_memory = true;
  o.pin_for = test::emu_device();
  o.transfer = [](data::Batch b) {
    b.input = b.input.to(test::emu_device(), /*non_blocking=*/true);
    return b;
  };
  data::DataLoader loader(std::make_shared<Ramp>(), o);
  loader.start_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_TRUE(batch->target.is_pinned());
  EXPECT_EQ(batch->input.device(), test::emu_device());
  synchronize(test::emu_device());
  EXPECT_EQ(batch->input.to_vector<float>()[5], 1.0f);
}

// Each capacity test runs on an emu index of its own, made after its
// settings are in the environment (a device reads them once, when made).
Device fresh_emu(int index, const char* memory, const char* checked) {
  setenv("GDRT_EMU_MEMORY", memory, 1);
  setenv("GDRT_EMU_CHECKED", checked, 1);
  const Device d{DeviceKind::emu, index};
  (void)backend(d);
  unsetenv("GDRT_EMU_MEMORY");
  unsetenv("GDRT_EMU_CHECKED");
  return d;
}

TEST(EmuSemantics, AllocationsBeyondTheConfiguredCapacityAreOutOfMemoryNamingTheLargest) {
  const Device dev = fresh_emu(2, "64M", "0");
  Tensor big = empty({10 << 20}, TensorOptions{}.with_device(dev));  // 40 MiB
  try {
    Tensor more = empty({10 << 20}, TensorOptions{}.with_device(dev));
    FAIL() << "a second 40 MiB fitted in 64 MiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), "GD008");
    const std::string m = e.what();
    EXPECT_NE(m.find("64.0 MiB total"), std::string::npos) << m;
    EXPECT_NE(m.find("Largest live allocations:\n  40.0 MiB"), std::string::npos) << m;
  }
  big = Tensor();
  Tensor again = empty({10 << 20}, TensorOptions{}.with_device(dev));
  EXPECT_EQ(again.numel(), 10 << 20);
}

TEST(EmuSemantics, CheckedModeReportsWorkThatRunsAfterItsMemoryWasFreed) {
  const Device dev = fresh_emu(3, "256M", "1");
  Stream side = Stream::create(dev, StreamFlags::non_blocking);
  Tensor x = full({1024}, 1.0, TensorOptions{}.with_device(dev));
  synchronize(dev);
  {
    StreamHold hold(dev, side.id());
    {
      StreamGuard g(side);
      (void)mul(x, 2.0);
    }
    x = Tensor();
    Stream(dev).synchronize();  // the free's own stream: done
  }
  try {
    side.synchronize();
    FAIL() << "the use after free went unreported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GD004"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("freed after the kernel was queued"), std::string::npos) << e.what();
  }
}

// Frees that CUDA orders after the work still reading the block are no use
// after free, however late that work runs: a free on the legacy default
// stream waits for a blocking stream's earlier work, and a free on a stream
// that waited for an event waits for the work before the event.
Tensor read_then_free_in_checked_mode(const Device& dev, Stream reader, bool event) {
  Tensor x = full({1024}, 1.0, TensorOptions{}.with_device(dev));
  synchronize(dev);
  Tensor result;
  StreamHold hold(dev, reader.id());
  {
    StreamGuard g(reader);
    result = mul(x, 2.0);
  }
  if (event) Stream(dev).wait(reader.record());
  x = Tensor();  // freed on the default stream
  hold.release();
  synchronize(dev);
  return result;
}

TEST(EmuSemantics, CheckedModeAcceptsAFreeTheLegacyStreamOrdersAfterABlockingStream) {
  const Device dev = fresh_emu(5, "256M", "1");
  const Tensor r = read_then_free_in_checked_mode(dev, Stream::create(dev, StreamFlags::blocking), false);
  EXPECT_TRUE(all_equal(r.to_vector<float>(), 2.0f));
}

TEST(EmuSemantics, CheckedModeAcceptsAFreeAnEventOrdersAfterTheRead) {
  const Device dev = fresh_emu(6, "256M", "1");
  const Tensor r = read_then_free_in_checked_mode(dev, Stream::create(dev, StreamFlags::non_blocking), true);
  EXPECT_TRUE(all_equal(r.to_vector<float>(), 2.0f));
}

// Ordering passes through a third stream: the default stream waits for a
// relay, which waited for the reader.
TEST(EmuSemantics, CheckedModeAcceptsAFreeOrderedThroughAnotherStream) {
  const Device dev = fresh_emu(7, "256M", "1");
  Stream reader = Stream::create(dev, StreamFlags::non_blocking);
  Stream relay = Stream::create(dev, StreamFlags::non_blocking);
  Tensor x = full({1024}, 1.0, TensorOptions{}.with_device(dev));
  synchronize(dev);
  Tensor result;
  {
    StreamHold hold(dev, reader.id());
    {
      StreamGuard g(reader);
      result = mul(x, 2.0);
    }
    relay.wait(reader.record());
    Stream(dev).wait(relay.record());
    x = Tensor();
  }
  synchronize(dev);
  EXPECT_TRUE(all_equal(result.to_vector<float>(), 2.0f));
}

TEST(EmuSemantics, AKernelGivenHostMemoryFailsAtTheNextSynchronisation) {
  const Device dev = fresh_emu(4, "64M", "0");
  std::vector<float> host(16);
  TensorView view{host.data(), DType::f32, {16}, {1}};
  backend(dev).launch(ops::Fill{view, 1.0}, 0, 0);  // the launch itself succeeds
  try {
    backend(dev).synchronize(0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("illegal memory access"), std::string::npos) << e.what();
  }
  EXPECT_EQ(host[0], 0.0f) << "the kernel wrote host memory";
  EXPECT_THROW(empty({4}, TensorOptions{}.with_device(dev)), Error) << "the error did not stick";
}

TEST(EmuSemantics, AHostDereferenceDiesOfSIGSEGVNamingTheAllocationAndItsStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executes: emu refuses a forked child
  EXPECT_EXIT(
      {
        Tensor t = ones({16}, TensorOptions{}.with_device(test::emu_device()));
        synchronize(test::emu_device());
        const volatile float* p = static_cast<const float*>(t.data_ptr());
        std::printf("%f\n", p[3]);
      },
      // Killed by the SIGSEGV, or, under AddressSanitizer (whose handler
      // ours passes the fault on to), exited non-zero after its report.
      [](int status) {
        return WIFSIGNALED(status) ? WTERMSIG(status) == SIGSEGV : WIFEXITED(status) && WEXITSTATUS(status) != 0;
      },
      "GD001: the host touched device memory of emu:0 at 0x[0-9a-f]+, 12 bytes into an allocation of 64 "
      "bytes.*The allocation was made at:\n");
}

TEST(EmuSemantics, AForkedChildCannotUseTheDevice) {
  (void)filled(4, 7.0);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    try {
      (void)filled(4, 7.0);
      _exit(1);
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("initialization error") != std::string::npos ? 0 : 2);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child used the device; 2: it failed for another reason";
}

}  // namespace
}  // namespace gdrt
