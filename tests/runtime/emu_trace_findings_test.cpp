// The bugs emu makes really happen are named by gpudiag's report from what
// gdrt's hooks record: each buggy case must be found, its fixed twin not.
// Streams are held at a gate (StreamHold) so the bug happens every run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "emu/emu_control.h"
#include "gdrt/gdrt.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gdrt {
namespace {

std::vector<std::string> rules_found(const std::function<void()>& program) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gdrt_emu_findings_" + std::to_string(::getpid()) + ".gdtrace")).string();
  EXPECT_TRUE(gpudiag::rec::start(path.c_str()));
  program();
  gpudiag::rec::stop();
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);
  const gpudiag::MemoryTimeline memory = gpudiag::build_memory_timeline(trace);
  const auto time = gpudiag::gpu_time_breakdown(trace);
  const gpudiag::RunPhases phases = gpudiag::find_phases(trace);
  std::vector<std::string> rules;
  for (const auto& f : gpudiag::run_detectors({trace, memory, time, {}, phases})) rules.push_back(f.rule_id);
  return rules;
}

bool has(const std::vector<std::string>& rules, const char* rule) {
  return std::find(rules.begin(), rules.end(), rule) != rules.end();
}

void read_before_sync(bool synchronise_first) {
  const Device dev = test::emu_device();
  Tensor d = full({4096}, 3.0, TensorOptions{}.with_device(dev));
  Tensor host;
  {
    emu::StreamHold hold(dev, 0);
    host = d.to(cpu_device(), /*non_blocking=*/true);
    if (!synchronise_first) (void)host.to_vector<float>();
  }
  synchronize(dev);
  (void)host.to_vector<float>();
}

// Float64 math the program allowed (AllowFloat64Promotion) runs float64
// kernels: on a device the report names them (GD002), on the cpu not.
void promoted_math(const Device& dev) {
  Tensor x = ones({256}).to(dev);
  Tensor w = full({256}, 0.5, TensorOptions{}.with_dtype(DType::f64)).to(dev);
  AllowFloat64Promotion promote;
  (void)sum(mul(x, w)).to(cpu_device()).to_vector<double>();
}

TEST(EmuTraceFindings, Float64KernelsOnTheDeviceAreGD002) {
  EXPECT_TRUE(has(rules_found([] { promoted_math(test::emu_device()); }), "GD002"));
  EXPECT_FALSE(has(rules_found([] { promoted_math(cpu_device()); }), "GD002"));
}

TEST(EmuTraceFindings, ReadingANonBlockingCopyBeforeTheSyncIsGD003) {
  EXPECT_TRUE(has(rules_found([] { read_before_sync(false); }), "GD003"));
  EXPECT_FALSE(has(rules_found([] { read_before_sync(true); }), "GD003"));
}

// A kernel's recorded time is when emu ran it, not when it was queued: one
// queued behind a held stream starts only after the hold is released.
TEST(EmuTraceFindings, AKernelIsTimedWhenItRunsNotWhenItWasQueued) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gdrt_emu_kernel_time_" + std::to_string(::getpid()) + ".gdtrace")).string();
  const Device dev = test::emu_device();
  Tensor x = full({4096}, 1.0, TensorOptions{}.with_device(dev));
  synchronize(dev);
  ASSERT_TRUE(gpudiag::rec::start(path.c_str()));
  std::uint64_t queued_ns = 0, released_ns = 0;
  {
    emu::StreamHold hold(dev, 0);
    queued_ns = gpudiag::rec::now_ns();
    x = mul(x, 2.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    released_ns = gpudiag::rec::now_ns();
  }
  synchronize(dev);
  gpudiag::rec::stop();
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);
  int seen = 0;
  for (const gpudiag::Kernel& k : trace.kernels)
    if (trace.str(k.name) == "gdrt::binary") {
      ++seen;
      EXPECT_GE(k.start_ns, released_ns) << "started " << (released_ns - k.start_ns) << " ns before its stream could run it";
      EXPECT_GE(k.start_ns, queued_ns);
      EXPECT_GE(k.end_ns, k.start_ns);
    }
  EXPECT_EQ(seen, 1);
}

void free_while_side_stream_reads(bool record_stream) {
  const Device dev = test::emu_device();
  Stream side = Stream::create(dev, StreamFlags::non_blocking);
  Tensor x = full({4096}, 1.0, TensorOptions{}.with_device(dev));
  // Filled on the default stream, which a non-blocking stream does not wait
  // for: without this the side stream could read x before it is written, a
  // second race beside the free under test.
  synchronize(dev);
  Tensor y;
  {
    emu::StreamHold hold(dev, side.id());
    {
      StreamGuard g(side);
      y = mul(x, 2.0);
    }
    if (record_stream) x.record_stream(side);
    x = Tensor();
    // The free runs on the default stream before the side stream may read:
    // the race under test happens in one order, the one ThreadSanitizer sees.
    Stream(dev).synchronize();
  }
  synchronize(dev);
}

TEST(EmuTraceFindings, FreeingATensorASideStreamStillReadsIsGD004) {
  EXPECT_TRUE(has(rules_found([] { free_while_side_stream_reads(false); }), "GD004"));
  EXPECT_FALSE(has(rules_found([] { free_while_side_stream_reads(true); }), "GD004"));
}

// A training loop whose batches are copied with non_blocking=true: from
// pageable memory the copy cannot be queued and returns only when done
// (GD009), from pinned memory it is queued and overlaps.
void copy_batches_in_the_loop(bool pinned) {
  const Device dev = test::emu_device();
  Tensor batch = full({4096}, 1.0);
  if (pinned) batch = batch.pin_memory(dev);
  Tensor w = full({4096}, 0.5, TensorOptions{}.with_device(dev));
  for (int i = 0; i < 4; ++i) {
    TrainingStep step;
    w = add(w, mul(batch.to(dev, /*non_blocking=*/true), 0.1));
  }
  synchronize(dev);
}

TEST(EmuTraceFindings, ANonBlockingCopyFromPageableMemoryInTheLoopIsGD009) {
  EXPECT_TRUE(has(rules_found([] { copy_batches_in_the_loop(false); }), "GD009"));
  EXPECT_FALSE(has(rules_found([] { copy_batches_in_the_loop(true); }), "GD009"));
}

// Which SIGSEGV handlers come before emu's fault handler in the chain.
enum class HandlersBefore {
  TheRecorders,         // recording starts before the device
  None,                 // the device starts first; the recorder's chains to it
  AFatalOneAndTheRecorders,  // a handler that ends the process (a sanitizer's) precedes both
};

[[noreturn]] void end_the_process(int, siginfo_t*, void*) { _exit(70); }

// Dies of a host read of device memory while recording into `path`.
[[noreturn]] void die_reading_device_memory(const std::string& path, HandlersBefore before) {
  if (before == HandlersBefore::AFatalOneAndTheRecorders) {
    struct sigaction sa {};
    sa.sa_sigaction = end_the_process;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
  }
  if (before == HandlersBefore::None) synchronize(test::emu_device());  // the device and its fault handler come first
  gpudiag::rec::start(path.c_str());
  Tensor loss = full({4}, 0.5, TensorOptions{}.with_device(test::emu_device()));
  synchronize(test::emu_device());
  std::printf("%f\n", static_cast<const volatile float*>(loss.data_ptr())[0]);
  std::exit(0);
}

// The fault kills the program; what it recorded, the fault included, is in
// the trace, and the report names GD001 with the allocation's stack.
void expect_gd001_in_the_trace_of_the_fault(HandlersBefore before) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executes: emu refuses a forked child
  // The re-executed child has its own pid: it finds the path in the environment it inherits.
  if (!std::getenv("GDRT_TEST_FAULT_TRACE"))
    setenv("GDRT_TEST_FAULT_TRACE",
           (std::filesystem::temp_directory_path() / ("gdrt_emu_fault_" + std::to_string(::getpid()))).c_str(), 1);
  const std::string path =
      std::string(std::getenv("GDRT_TEST_FAULT_TRACE")) + "_" + std::to_string(static_cast<int>(before)) + ".gdtrace";
  EXPECT_EXIT(die_reading_device_memory(path, before),
              [](int status) { return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0); },
              "GD001");
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);
  EXPECT_EQ(trace.crashes.size(), 1u);
  const gpudiag::MemoryTimeline memory = gpudiag::build_memory_timeline(trace);
  const auto time = gpudiag::gpu_time_breakdown(trace);
  const gpudiag::RunPhases phases = gpudiag::find_phases(trace);
  bool named = false;
  for (const auto& f : gpudiag::run_detectors({trace, memory, time, {}, phases}))
    if (f.rule_id == "GD001") {
      named = true;
      EXPECT_NE(f.message.find("the host dereferenced device memory"), std::string::npos) << f.message;
      ASSERT_FALSE(f.notes.empty());
      EXPECT_FALSE(f.notes[0].stack.empty()) << "no allocation stack";
    }
  EXPECT_TRUE(named);
}

TEST(EmuTraceFindings, AHostDereferenceIsGD001InTheTraceWhenRecordingStartedFirst) {
  expect_gd001_in_the_trace_of_the_fault(HandlersBefore::TheRecorders);
}

TEST(EmuTraceFindings, AHostDereferenceIsGD001InTheTraceWhenTheDeviceStartedFirst) {
  expect_gd001_in_the_trace_of_the_fault(HandlersBefore::None);
}

// As under AddressSanitizer, whose SIGSEGV handler reports and exits.
TEST(EmuTraceFindings, AHostDereferenceIsGD001InTheTraceWhenAFatalHandlerWasInstalledFirst) {
  expect_gd001_in_the_trace_of_the_fault(HandlersBefore::AFatalOneAndTheRecorders);
}

TEST(EmuTraceFindings, AHealthyTrainingStepOnEmuHasNoErrorFinding) {
  const auto rules = rules_found([] {
    nn::UNet model({3, 1, 4, 2, true, 1});
    model.to(test::emu_device());
    optim::Adam opt(model.named_parameters(), {1e-2});
    Generator g(0);
    for (int i = 0; i < 3; ++i) {
      TrainingStep step;
      opt.zero_grad();
      Tensor x = randn({2, 3, 16, 16}, g).to(test::emu_device());
      Tensor loss = mean(mul(model(x), model(x)));
      loss.backward();
      opt.step();
      (void)loss.to(cpu_device()).item();
    }
  });
  for (const char* rule : {"GD001", "GD002", "GD003", "GD004", "GD007", "GD008"}) EXPECT_FALSE(has(rules, rule)) << rule;
}

}  // namespace
}  // namespace gdrt
