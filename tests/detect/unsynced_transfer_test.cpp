// Positive and negative traces for GD001..GD004, GD006 and raised findings
// (GD005's are in scalar_indexing_test.cpp).
#include <stdexcept>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/catalogue.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// The catalogue drives the list: every rule a trace can show has the
// detector of its name, and every detector is a rule's.
TEST(Detectors, EveryRuntimeRuleOfTheCatalogueHasTheDetectorOfItsName) {
  std::vector<std::string> names;
  for (const Detector& d : rule_detectors()) names.emplace_back(d.rule);
  for (const Rule& r : catalogue()) {
    if (!r.is_runtime) continue;
    EXPECT_NE(std::find(names.begin(), names.end(), r.name), names.end()) << r.id << " " << r.name;
  }
  for (const std::string& name : names) {
    const Rule* rule = find_rule(name);
    ASSERT_NE(rule, nullptr) << "detect/" << name << ".cpp has no rules/" << name << ".md";
    EXPECT_TRUE(rule->is_runtime) << name << " is not a runtime rule in its catalogue entry";
  }
  EXPECT_EQ(detectors().size(), rule_detectors().size() + 1) << "and the pass over findings the program raised";
}

TEST(DeviceMismatch, HostReadOfDeviceMemoryIsReportedWithTheAllocatingStack) {
  Trace t;
  const StackId where = stack_named(t, "make_buffer", "unet.cpp", 12);
  alloc(t, 10, 0x7000, 256, 0, where);
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x7010, .bytes = 4, .stack = stack_named(t, "loss_item")});
  const auto f = only(detect(t), "GD001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Error);
  EXPECT_NE(f[0].message.find("device memory"), std::string::npos);
  ASSERT_EQ(f[0].stack.size(), 1u);
  EXPECT_EQ(f[0].stack[0].function, "loss_item");
  ASSERT_FALSE(f[0].notes.empty());
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "make_buffer");
}

TEST(DeviceMismatch, HostAccessOfHostOrPinnedMemoryIsFine) {
  Trace t;
  alloc(t, 10, 0x7000, 256, kHostDevice, kNoStack, MemKind::Pageable);
  alloc(t, 10, 0x9000, 256, 0, kNoStack, MemKind::Pinned);
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x7010, .bytes = 4});
  t.host_accesses.push_back({.time_ns = 20, .addr = 0x9010, .bytes = 4});
  t.host_accesses.push_back({.time_ns = 5, .addr = 0x7010, .bytes = 4});  // before anything
  EXPECT_TRUE(only(detect(t), "GD001").empty());
}

TEST(Float64Leak, KernelsWithDoubleTemplateArgumentsAreReported) {
  EXPECT_TRUE(is_float64_kernel("void gemm_kernel<double, 128>(double const*, double*, int)"));
  EXPECT_TRUE(is_float64_kernel("void scale(double*, int)"));
  EXPECT_TRUE(is_float64_kernel("volta_dgemm_128x64_nn"));
  EXPECT_TRUE(is_float64_kernel("void add<c10::complex<double>>(int)"));
  EXPECT_FALSE(is_float64_kernel("void gemm_kernel<float, 128>(float const*, float*, int)"));
  EXPECT_FALSE(is_float64_kernel("void doubleBuffered<float>(float*)"));
  // PyTorch passes scalars as double to the function whose lambda the kernel runs: not FP64 math.
  EXPECT_FALSE(is_float64_kernel(
      "void at::native::elementwise<float, at::native::uniform_kernel(at::TensorIteratorBase&, double, double)"
      "::{lambda(float)#1}>(int, float)"));
  Trace t;
  kernel(t, 0, 1000, "void gemm_kernel<double, 128>(double const*, double*, int)");
  kernel(t, 1000, 3000, "void gemm_kernel<double, 128>(double const*, double*, int)");
  kernel(t, 3000, 4000, "void relu<float>(float*)");
  const auto f = only(detect(t), "GD002");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("2 launches"), std::string::npos);
  EXPECT_NE(f[0].message.find("75.0% of kernel time"), std::string::npos);
}

// gdrt names its float64 kernels so; the same kernels on gdrt's cpu device
// (the host) cost little: no GD002 there.
TEST(Float64Leak, GdrtFloat64KernelsOnADeviceAreReportedOnTheHostNot) {
  EXPECT_TRUE(is_float64_kernel("gdrt::binary<double>"));
  EXPECT_FALSE(is_float64_kernel("gdrt::binary"));
  Trace t;
  kernel(t, 0, 1000, "gdrt::binary<double>", kHostDevice);
  kernel(t, 1000, 2000, "gdrt::reduce<double>", kHostDevice);
  EXPECT_TRUE(only(detect(t), "GD002").empty());
  kernel(t, 2000, 3000, "gdrt::binary<double>", 1000);
  kernel(t, 3000, 4000, "gdrt::binary", 1000);
  const auto f = only(detect(t), "GD002");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("kernel 'gdrt::binary<double>' computes in Float64 (1 launches"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("50.0% of kernel time"), std::string::npos) << f[0].message;
}

TEST(UnsyncedTransfer, ReadBeforeTheStreamSyncIsReported) {
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.host_accesses.push_back({.time_ns = 300, .addr = 0x5100, .bytes = 4, .stack = stack_named(t, "print_loss")});
  const auto f = only(detect(t), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("still running"), std::string::npos);
  EXPECT_EQ(f[0].stack.at(0).function, "print_loss");
}

// A runtime that records a copy when it queues it (gdrt) gives no end: the
// finding then claims nothing about which came first.
TEST(UnsyncedTransfer, ACopyWithoutAnEndTimeIsReportedWithoutTiming) {
  Trace t;
  Memcpy c = copy(100, 0, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.host_accesses.push_back({.time_ns = 300, .addr = 0x5100, .bytes = 4});
  const auto f = only(detect(t), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.find("happened to finish"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].message.find("still running"), std::string::npos) << f[0].message;
}

TEST(UnsyncedTransfer, SyncOfTheStreamOrDeviceCoversTheRead) {
  for (SyncKind kind : {SyncKind::Stream, SyncKind::Device}) {
    Trace t;
    Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
    c.dst = 0x5000;
    t.memcpys.push_back(c);
    t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = kind, .device = 0, .stream = 7});
    t.host_accesses.push_back({.time_ns = 600, .addr = 0x5100, .bytes = 4});
    EXPECT_TRUE(only(detect(t), "GD003").empty()) << to_string(kind);
  }
  // A sync of another stream does not.
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = SyncKind::Stream, .device = 0, .stream = 99});
  t.host_accesses.push_back({.time_ns = 600, .addr = 0x5100, .bytes = 4});
  EXPECT_EQ(only(detect(t), "GD003").size(), 1u);
}

// A host access the copy guard caught on a GPU: it names its copy (by the
// correlation of the copy's API call), and is reported whatever the syncs
// around it, with the accessing stack and the copy's.
Trace guarded_access_trace(AccessKind access, std::uint64_t guarded_copy, std::uint64_t access_time = 300) {
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1 << 20, true);
  c.dst = 0x7f0000000000;
  c.correlation = 77;
  t.memcpys.push_back(c);
  t.api_calls.push_back({.start_ns = 90, .end_ns = 95, .name = t.intern("cudaMemcpyAsync"), .domain = ApiDomain::Runtime,
                         .correlation = 77, .stack = stack_named(t, "fetch_predictions", "infer.cu", 12)});
  t.host_accesses.push_back({.time_ns = access_time, .addr = 0x7f0000001010, .access = access,
                             .stack = stack_named(t, "write_mask", "infer.cu", 14), .guarded_copy = guarded_copy});
  return t;
}

TEST(UnsyncedTransfer, AnAccessTheCopyGuardCaughtIsReportedWithBothStacks) {
  const auto f = only(detect(guarded_access_trace(AccessKind::Read, 77)), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Error);
  EXPECT_NE(f[0].message.find("host read at 0x7f0000001010"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("cudaMemcpyAsync of 1.00 MiB on stream 7"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("still running"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "write_mask");
  ASSERT_EQ(f[0].notes.size(), 1u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "fetch_predictions");
  // After the copy ended it is still the bug: the copy happened to be first.
  const auto late = only(detect(guarded_access_trace(AccessKind::Read, 77, 900)), "GD003");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_NE(late[0].message.find("happened to finish first"), std::string::npos) << late[0].message;
}

TEST(UnsyncedTransfer, ACaughtWriteIsReportedAsAWrite) {
  const auto f = only(detect(guarded_access_trace(AccessKind::Write, 77)), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("host write at"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("may overwrite"), std::string::npos) << f[0].message;
}

TEST(UnsyncedTransfer, AnAccessWithoutAGuardedCopyAfterTheSyncIsNotReported) {
  Trace t = guarded_access_trace(AccessKind::Read, 0, 900);
  t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = SyncKind::Stream, .device = 0, .stream = 7});
  EXPECT_TRUE(only(detect(t), "GD003").empty());
}

TEST(UnsyncedTransfer, ACaughtAccessIsOneFindingPerCopyNotTwo) {
  // The time-based matching would see the same read: it leaves caught accesses
  // to the guard's report, and a copy caught twice is reported once.
  Trace t = guarded_access_trace(AccessKind::Read, 77);
  t.host_accesses.push_back(t.host_accesses[0]);
  t.host_accesses.back().time_ns = 310;
  EXPECT_EQ(only(detect(t), "GD003").size(), 1u);
  // A copy whose records were lost is still named, by its call or not at all.
  Trace lost = guarded_access_trace(AccessKind::Read, 78);
  const auto f = only(detect(lost), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("not in the trace"), std::string::npos) << f[0].message;
}

TEST(PrematureFree, FreeWhileACopyOnAnotherStreamRunsIsReported) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0, stack_named(t, "alloc_activations"));
  Memcpy c = copy(100, 900, CopyKind::DtoH, 4096, true);
  c.src = 0xA000;
  c.stream = 3;
  t.memcpys.push_back(c);
  free_at(t, 200, 0xA000, 0, /*stream=*/0, stack_named(t, "release"));
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("still running"), std::string::npos);
  EXPECT_EQ(f[0].stack.at(0).function, "release");
}

TEST(PrematureFree, StreamOrderedFreeAndFinishedWorkAreFine) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  Memcpy c = copy(100, 900, CopyKind::DtoH, 4096, true);
  c.src = 0xA000;
  c.stream = 3;
  t.memcpys.push_back(c);
  free_at(t, 200, 0xA000, 0, /*stream=*/3);  // same stream: ordered after the copy
  alloc(t, 1000, 0xB000, 64, 0);
  Memcpy d = copy(1100, 1200, CopyKind::HtoD, 64, true);
  d.dst = 0xB000;
  t.memcpys.push_back(d);
  free_at(t, 1300, 0xB000);
  EXPECT_TRUE(only(detect(t), "GD004").empty());
}

// A host that runs ahead queues a copy, frees its buffer on the same stream
// (stream-ordered, as PyTorch's allocator and cudaFreeAsync do) and goes on:
// the copy runs after the free's call, but before the memory is reused. A
// copy queued after the free is a use after free all the same.
TEST(PrematureFree, WorkQueuedBeforeAFreeOnItsStreamRunsAfterItAndIsFine) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  const StringId call = t.intern("gdrt::copy");
  t.api_calls.push_back({.start_ns = 20, .end_ns = 21, .name = call, .correlation = 5});
  Memcpy queued_before = copy(300, 310, CopyKind::HtoD, 4096, true);
  queued_before.dst = 0xA000;
  queued_before.stream = 3;
  queued_before.correlation = 5;
  t.memcpys.push_back(queued_before);
  free_at(t, 200, 0xA000, 0, /*stream=*/3);
  EXPECT_TRUE(only(detect(t), "GD004").empty());

  t.api_calls.push_back({.start_ns = 250, .end_ns = 251, .name = call, .correlation = 6});
  Memcpy queued_after = queued_before;
  queued_after.start_ns = 400;
  queued_after.end_ns = 410;
  queued_after.correlation = 6;
  t.memcpys.push_back(queued_after);
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("copy into 0xa000"), std::string::npos) << f[0].message;
}

TEST(PrematureFree, UseAfterFreeAndDoubleFree) {
  Trace t;
  alloc(t, 10, 0xA000, 4096, 0);
  free_at(t, 20, 0xA000);
  t.memsets.push_back({.start_ns = 30, .end_ns = 40, .addr = 0xA100, .bytes = 16, .device = 0});
  free_at(t, 50, 0xA000);
  const auto f = only(detect(t), "GD004");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NE(f[0].message.find("freed"), std::string::npos);
  EXPECT_NE(f[1].message.find("double free"), std::string::npos);
}

TEST(PageableAsyncCopy, TheCopiesOfSettingUpAreNotJudged) {
  Trace t = training_loop(10, 0, 5'000'000);
  for (int i = 0; i < 100; ++i)
    t.memcpys.push_back(copy(1000 + 1000 * i, 1000 + 1000 * i + 500, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.sort_by_time();
  EXPECT_TRUE(only(detect(t), "GD009").empty()) << "model.to(device) before the loop";
  t.memcpys.push_back(copy(6'000'000, 6'000'500, CopyKind::HtoD, 1 << 20, true, MemKind::Pageable));
  t.sort_by_time();
  EXPECT_EQ(only(detect(t), "GD009").size(), 1u) << "a batch copied from pageable memory in the loop";
}

TEST(UncheckedCudaError, FailedCallsAreGroupedByNameAndStatus) {
  Trace t;
  for (int i = 0; i < 3; ++i)
    t.api_calls.push_back({.start_ns = 10u * i, .end_ns = 10u * i + 5, .name = t.intern("cudaMemcpy"), .status = 1});
  t.api_calls.push_back({.start_ns = 100, .end_ns = 105, .name = t.intern("cudaLaunchKernel"), .status = 0});
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("cudaMemcpy returned error 1 \"invalid argument\" (3 calls"), std::string::npos)
      << f[0].message;
}

TEST(UncheckedCudaError, AFailedLaunchIsNamedByItsKernelAndSaysItNeverRan) {
  Trace t;
  for (int i = 0; i < 2; ++i)
    t.api_calls.push_back({.start_ns = 10u * i, .end_ns = 10u * i + 1, .name = t.intern("cudaLaunchKernel"),
                           .status = 1, .stack = stack_named(t, "train_step"), .symbol = t.intern("_Z4fillPfif")});
  t.api_calls.push_back({.start_ns = 50, .end_ns = 51, .name = t.intern("cudaDeviceSynchronize"), .status = 0});
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u) << "one finding for the kernel's failed launches";
  EXPECT_NE(f[0].message.find("the launch of fill(float*, int, float) returned error 1 \"invalid argument\" "
                              "(2 launches): the kernel never ran"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("Only cudaGetLastError reports"), std::string::npos) << f[0].message;
  ASSERT_FALSE(f[0].stack.empty());
  EXPECT_EQ(f[0].stack[0].function, "train_step");
}

TEST(UncheckedCudaError, OutOfMemoryIsGD008AndNotReadyOrGetLastErrorAreNoErrors) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("cudaMalloc"), .status = 2});
  t.api_calls.push_back({.start_ns = 30, .end_ns = 31, .name = t.intern("cudaGetLastError"), .status = 2});
  t.api_calls.push_back({.start_ns = 40, .end_ns = 41, .name = t.intern("cudaStreamQuery"), .status = 600});
  const auto all = detect(t);
  EXPECT_TRUE(only(all, "GD006").empty()) << only(all, "GD006").front().message;
  const auto oom = only(all, "GD008");
  ASSERT_EQ(oom.size(), 1u) << "an allocation that returned out of memory, with no out-of-memory event recorded";
  EXPECT_NE(oom[0].message.find("out of memory on device 0: a request failed"), std::string::npos) << oom[0].message;
}

TEST(UncheckedCudaError, OneAllocationFailureWithItsEventIsReportedOnce) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 20, .name = t.intern("cudaMalloc"), .status = 2});
  t.ooms.push_back({.time_ns = 20, .requested_bytes = 1ull << 40, .capacity_bytes = 80ull << 30, .device = 0});
  const auto oom = only(detect(t), "GD008");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_NE(oom[0].message.find("a request for 1.00 TiB failed"), std::string::npos) << oom[0].message;
  EXPECT_NE(oom[0].message.find("of 80.0 GiB capacity"), std::string::npos) << oom[0].message;
}

TEST(UncheckedCudaError, AKernelErrorIsReportedOnceWithTheKernelsLaunchedBeforeIt) {
  Trace t;
  auto call = [&](std::uint64_t at, const char* name, std::int32_t status, const char* kernel = nullptr) {
    t.api_calls.push_back({.start_ns = at, .end_ns = at + 1, .name = t.intern(name), .status = status,
                           .stack = stack_named(t, kernel ? "launch_site" : "call_site"),
                           .symbol = kernel ? t.intern(kernel) : 0});
  };
  call(10, "cudaLaunchKernel", 0, "finished_before_the_sync");
  call(20, "cudaDeviceSynchronize", 0);
  call(30, "cudaLaunchKernel", 0, "reads_a_host_pointer");
  call(40, "cudaLaunchKernel", 0, "scale");
  call(50, "cudaDeviceSynchronize", 700);
  call(60, "cudaMemcpy", 700);
  call(70, "cudaFree", 700);
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u) << "one finding for the error, not one per call that returned it";
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("cudaDeviceSynchronize returned error 700 \"an illegal memory access was encountered\""),
            std::string::npos) << m;
  EXPECT_NE(m.find("2 later calls returned it too"), std::string::npos) << m;
  EXPECT_NE(m.find("newest first: scale, reads_a_host_pointer"), std::string::npos) << m;
  EXPECT_EQ(m.find("finished_before_the_sync"), std::string::npos) << "it completed before a successful sync: " << m;
  ASSERT_EQ(f[0].notes.size(), 2u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "launch_site");
}

// gdrt names each launch call by its kernel, with no CUDA launch API name:
// it is a launch all the same, for every detector.
TEST(UncheckedCudaError, ALaunchNamedByItsKernelIsASuspectToo) {
  Trace t;
  t.api_calls.push_back({.start_ns = 10, .end_ns = 11, .name = t.intern("conv2d_forward"), .domain = ApiDomain::Gdrt,
                         .symbol = t.intern("conv2d_forward")});
  t.api_calls.push_back({.start_ns = 20, .end_ns = 21, .name = t.intern("gdrt::copy"), .domain = ApiDomain::Gdrt});
  t.api_calls.push_back({.start_ns = 30, .end_ns = 31, .name = t.intern("cudaStreamSynchronize"), .status = 700});
  EXPECT_TRUE(t.is_launch(t.api_calls[0]));
  EXPECT_FALSE(t.is_launch(t.api_calls[1]));
  const auto f = only(detect(t), "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("newest first: conv2d_forward"), std::string::npos) << f[0].message;
}

TEST(RaisedFindings, BecomeFindingsWithTheCatalogueSeverity) {
  Trace t;
  t.findings.push_back({.time_ns = 5, .rule_id = t.intern("GD005"), .message = t.intern("item() on an emu tensor"),
                        .stack = stack_named(t, "Tensor::item")});
  const auto f = only(detect(t), "GD005");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "item() on an emu tensor");
  EXPECT_EQ(f[0].severity, Severity::Warning);
}

// A damaged record that names no rule is no finding of any rule.
TEST(RaisedFindings, ARecordThatNamesNoRuleIsNoFinding) {
  Trace t;
  t.findings.push_back({.time_ns = 5, .rule_id = 0, .message = t.intern("garbled")});
  EXPECT_TRUE(detect(t).empty());
}

// A detector never spells its own rule: the registry runs it for the rule of
// its name, and another rule is named by its name in the catalogue.
TEST(Detectors, ARuleIsNamedByItsCatalogueNameAndAnUnknownNameFailsLoudly) {
  EXPECT_EQ(rule_named("out-of-memory").id, "GD008");
  EXPECT_THROW(rule_named("GD008"), std::logic_error) << "by its name, not its id";
  EXPECT_THROW(rule_named("no-such-rule"), std::logic_error);
}

TEST(Detectors, AFindingIsOfTheRuleWhoseDetectorRuns) {
  const Trace t;
  const MemoryTimeline memory = build_memory_timeline(t);
  const auto time = gpu_time_breakdown(t);
  const RunPhases phases = find_phases(t);
  const DetectOptions options;
  DetectContext ctx{t, memory, time, options, phases};
  EXPECT_THROW(make_finding(ctx, "outside any detector"), std::logic_error);
  ctx.rule = &rule_named("premature-free");
  const Finding f = make_finding(ctx, "freed too early");
  EXPECT_EQ(f.rule_id, "GD004");
  EXPECT_EQ(f.severity, Severity::Error);
  EXPECT_EQ(f.message, "freed too early");
}

TEST(Detectors, AnEmptyTraceHasNoFindings) { EXPECT_TRUE(detect(Trace{}).empty()); }

}  // namespace
}  // namespace gpudiag
