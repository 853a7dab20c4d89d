// libgdrt's tracing hooks write allocations, frees, copies and the rules it
// raises itself into a real .gdtrace, read back with the tracer's reader.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/hooks.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gdrt {
namespace {

TEST(TraceHooks, RecordsMemoryCopiesAndFindings) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gdrt_hooks_" + std::to_string(::getpid()) + ".gdtrace")).string();
  ASSERT_TRUE(gpudiag::rec::start(path.c_str()));
  {
    Tensor a = ones({256});                    // 1 KiB host allocation
    Tensor d = a.to(test::emu_device());      // device allocation + host-to-device copy
    EXPECT_THROW(add(a, d), Error);            // GD001, raised and recorded
    Tensor e = mul(d, d);                      // a kernel on the device
    AllowScalar allow;
    (void)d.at({3});                           // a host read of device memory
  }                                            // everything freed here
  gpudiag::rec::stop();
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);

  bool host_alloc = false, device_alloc = false;
  for (const auto& a : trace.allocs) {
    host_alloc |= a.bytes == 1024 && a.device == gpudiag::kHostDevice;
    device_alloc |= a.bytes == 1024 && a.device == kEmuTraceDevice && a.kind == gpudiag::MemKind::Device;
  }
  EXPECT_TRUE(host_alloc);
  EXPECT_TRUE(device_alloc);
  EXPECT_GE(trace.frees.size(), 2u);
  bool h2d = false;
  for (const auto& m : trace.memcpys)
    h2d |= m.bytes == 1024 && m.src_kind == gpudiag::MemKind::Pageable && m.dst_kind == gpudiag::MemKind::Device;
  EXPECT_TRUE(h2d);
  ASSERT_FALSE(trace.findings.empty());
  EXPECT_EQ(trace.str(trace.findings.front().rule_id), "GD001");
  EXPECT_NE(trace.str(trace.findings.front().message).find("add"), std::string_view::npos);
  bool mul_on_device = false;
  for (const auto& k : trace.kernels)
    mul_on_device |= trace.str(k.name) == "gdrt::binary" && k.device == kEmuTraceDevice && k.end_ns >= k.start_ns;
  EXPECT_TRUE(mul_on_device);
  // The allowed scalar read is what cudaMemcpy of one element is: a small
  // device-to-host copy and a wait, not a host dereference (which is GD001).
  EXPECT_TRUE(trace.host_accesses.empty());
  bool small_d2h = false;
  for (const auto& m : trace.memcpys)
    small_d2h |= m.bytes == 4 && m.src_kind == gpudiag::MemKind::Device && m.dst_kind == gpudiag::MemKind::Pageable;
  EXPECT_TRUE(small_d2h);
  EXPECT_FALSE(trace.syncs.empty());
}

// Steps marked with TrainingStep become the run's iterations in a report.
TEST(TraceHooks, TrainingStepsAreTheIterationsOfTheRun) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gdrt_steps_" + std::to_string(::getpid()) + ".gdtrace")).string();
  ASSERT_TRUE(gpudiag::rec::start(path.c_str()));
  std::int64_t first = -1;
  for (int i = 0; i < 4; ++i) {
    TrainingStep step;
    if (first < 0) first = step.number();
    Tensor a = ones({64}).to(test::emu_device());
    Tensor b = mul(a, a);
  }
  gpudiag::rec::stop();
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);
  ASSERT_EQ(trace.ranges.size(), 4u);
  EXPECT_EQ(trace.str(trace.ranges[0].name), "ProfilerStep#" + std::to_string(first));
  EXPECT_EQ(trace.str(trace.ranges[3].name), "ProfilerStep#" + std::to_string(first + 3));
  for (const auto& r : trace.ranges) EXPECT_GT(r.end_ns, r.start_ns);
  const gpudiag::RunPhases phases = gpudiag::find_phases(trace);
  EXPECT_TRUE(phases.has_loop());
  EXPECT_EQ(phases.iterations.size(), 4u);
}

// Under the CUPTI tracer CUDA's work is CUPTI's to record, with its own
// stream ids: the hooks record none of a cuda device's, still an emu
// device's, and the training steps. (The flag is for the life of the
// process: ctest runs each test in its own.)
TEST(TraceHooks, ACudaDevicesWorkIsLeftToTheGpuTracer) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gdrt_hooks_cupti_" + std::to_string(::getpid()) + ".gdtrace")).string();
  ASSERT_TRUE(gpudiag::rec::start(path.c_str()));
  const Device cuda(DeviceKind::cuda, 0);
  EXPECT_TRUE(hooks::recording(cuda));
  gpudiag::rec::set_gpu_work_traced();
  EXPECT_FALSE(hooks::recording(cuda));
  EXPECT_TRUE(hooks::recording(test::emu_device()));
  int word = 0;
  hooks::allocated(cuda, &word, sizeof word, MemoryKind::device, 0);
  hooks::synchronized(cuda, hooks::SyncScope::device, 0, 10, 20);
  hooks::synchronized(test::emu_device(), hooks::SyncScope::device, 0, 30, 40);
  { TrainingStep step; }
  gpudiag::rec::stop();
  const gpudiag::Trace trace = gpudiag::read_gdtrace(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(trace.allocs.empty());
  ASSERT_EQ(trace.syncs.size(), 1u);
  EXPECT_EQ(trace.syncs[0].start_ns, 30u) << "the emu device's";
  EXPECT_EQ(trace.ranges.size(), 1u) << "the step";
}

TEST(TraceHooks, AStepOutsideATraceRecordsNothingAndStillCounts) {
  TrainingStep a;
  TrainingStep b;
  EXPECT_EQ(b.number(), a.number() + 1);
}

}  // namespace
}  // namespace gdrt
