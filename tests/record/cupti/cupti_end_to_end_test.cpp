// The CUPTI injection library traces a real CUDA program end to end
// (cuda_trace_program.cu: every allocation family, streams, events, a graph)
// without changing what it does. Needs a GPU and its driver; skips with the
// reason otherwise.
#include <algorithm>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "detect_support.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

struct ProgramRun {
  int status = 0;
  std::string out;
};

// Runs the CUDA program with extra environment and arguments, capturing its stdout.
ProgramRun run_program(const std::vector<std::string>& env, const std::vector<std::string>& args = {}) {
  const std::string out = test::temp_path("cuda-stdout.txt");
  std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" >" + out, CUDA_TRACE_PROGRAM};
  argv.insert(argv.end(), args.begin(), args.end());
  const int status = test::run(argv, env);
  return {status, test::read_file(out)};
}

std::string skip_reason() {
  if (std::string(CUDA_TRACE_PROGRAM).empty()) return "nvcc was not found at configure time: no CUDA test program";
  return test::why_no_gpu();
}

Trace traced_run(ProgramRun& run, const std::vector<std::string>& args = {}, const std::vector<std::string>& env = {}) {
  // temp_path numbers each call: this run's trace is the one file with its prefix.
  const std::string pattern = test::temp_path("cuda-%p.gdtrace");
  std::vector<std::string> all_env{"GPUDIAG_TRACE=" + pattern, "CUDA_INJECTION64_PATH=" GPUDIAG_CUPTI_LIBRARY,
                                   "NVTX_INJECTION64_PATH=" GPUDIAG_CUPTI_LIBRARY};
  all_env.insert(all_env.end(), env.begin(), env.end());
  run = run_program(all_env, args);
  const auto dir = std::filesystem::path(pattern).parent_path();
  const std::string name = std::filesystem::path(pattern).filename().string();
  const std::string stem = name.substr(0, name.find("%p"));
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(stem) && e.path().extension() == ".gdtrace") file = e.path().string();
  if (file.empty()) throw std::runtime_error("the traced run wrote no trace");
  Trace t = load_trace(file);
  symbolize(t);
  return t;
}

TEST(CuptiEndToEnd, ATracedRunBehavesAsTheUntracedOne) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const ProgramRun untraced = run_program({});
  ASSERT_TRUE(WIFEXITED(untraced.status) && WEXITSTATUS(untraced.status) == 0) << untraced.out;
  ProgramRun traced;
  const Trace t = traced_run(traced);
  EXPECT_EQ(traced.status, untraced.status);
  EXPECT_EQ(traced.out, untraced.out) << "same results, traced or not";
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_TRUE(t.crashes.empty());
  // Its copies into pinned and registered memory are read after their syncs:
  // the copy guard catches nothing.
  EXPECT_TRUE(std::none_of(t.host_accesses.begin(), t.host_accesses.end(),
                           [](const HostAccess& a) { return a.guarded_copy != 0; }));
  EXPECT_TRUE(only(analyze(t).findings, "GD003").empty());
}

std::vector<const HostAccess*> guarded_accesses(const Trace& t) {
  std::vector<const HostAccess*> out;
  for (const HostAccess& a : t.host_accesses)
    if (a.guarded_copy != 0) out.push_back(&a);
  return out;
}

// cuda_trace_program guard: a read and a write of pinned memory and a read of
// registered memory before their syncs, then reads after every kind of sync.
TEST(CuptiEndToEnd, TheCopyGuardCatchesEachAccessBeforeItsSyncAndNoneAfter) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const ProgramRun untraced = run_program({}, {"guard"});
  ASSERT_EQ(untraced.status, 0) << untraced.out;
  ProgramRun run;
  const Trace t = traced_run(run, {"guard"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.out;
  EXPECT_EQ(run.out, "guard ok\n") << "the copies wrote all their data into the protected pages";
  EXPECT_TRUE(t.crashes.empty());
  const auto caught = guarded_accesses(t);
  std::string seen;
  for (const HostAccess* a : caught) {
    const auto frames = frames_of(t, a->stack);
    const auto call = std::find_if(t.api_calls.begin(), t.api_calls.end(),
                                   [&](const ApiCall& c) { return c.correlation == a->guarded_copy; });
    seen += std::string(a->access == AccessKind::Read ? "read" : "write") + " of 0x" + fmt::format("{:x}", a->addr) +
            " guarded by " + (call == t.api_calls.end() ? "?" : std::string(t.str(call->name))) + " at " +
            (frames.empty() ? "?" : frames[0].function);
    for (std::size_t i = 0; i < frames.size() && i < 3; ++i) seen += " :" + std::to_string(frames[i].line);
    seen += "\n";
  }
  ASSERT_EQ(caught.size(), 3u) << seen;
  const AccessKind expected[] = {AccessKind::Read, AccessKind::Write, AccessKind::Read};
  for (std::size_t i = 0; i < caught.size(); ++i) {
    EXPECT_EQ(caught[i]->access, expected[i]) << i;
    const auto call = std::find_if(t.api_calls.begin(), t.api_calls.end(),
                                   [&](const ApiCall& a) { return a.correlation == caught[i]->guarded_copy; });
    ASSERT_NE(call, t.api_calls.end()) << "the access names its copy's call";
    EXPECT_EQ(t.str(call->name), "cudaMemcpyAsync");
    const auto frames = frames_of(t, caught[i]->stack);
    ASSERT_FALSE(frames.empty());
    EXPECT_NE(frames[0].function.find("guard_scenarios"), std::string::npos) << frames[0].function;
  }
  const auto findings = only(analyze(t).findings, "GD003");
  EXPECT_EQ(findings.size(), 3u);
  for (const Finding& f : findings) EXPECT_EQ(f.severity, Severity::Error);
}

// cuda_trace_program steps: five NVTX ranges "step N" around the launches,
// which reach the trace through CUPTI and are the run's iterations.
TEST(CuptiEndToEnd, NvtxRangesAreTheRunsSteps) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  ProgramRun run;
  const Trace t = traced_run(run, {"steps"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.out;
  std::set<std::uint32_t> launching;
  for (const ApiCall& a : t.api_calls)
    if (api_kind(t.str(a.name)) == ApiKind::Launch) launching.insert(a.tid);
  std::vector<const Range*> steps;
  for (const Range& r : t.ranges)
    if (t.str(r.name).starts_with("step ")) steps.push_back(&r);
  ASSERT_EQ(steps.size(), 5u) << t.ranges.size() << " ranges in all";
  for (const Range* r : steps) {
    EXPECT_GT(r->end_ns, r->start_ns);
    EXPECT_TRUE(launching.count(r->tid)) << "on the thread that launched, by its OS id: " << r->tid;
  }
  const Report report = analyze(t);
  ASSERT_EQ(report.phases.iterations.size(), 5u);
  EXPECT_NE(report.phases.source.find("range"), std::string::npos) << report.phases.source;
}

TEST(CuptiEndToEnd, TheCopyGuardCanBeTurnedOff) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  ProgramRun run;
  const Trace t = traced_run(run, {"guard"}, {"GPUDIAG_TRACE_GUARD=off"});
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.out;
  EXPECT_TRUE(guarded_accesses(t).empty());
}

TEST(CuptiEndToEnd, EveryAllocationFamilyIsRecordedWithTheCallersStack) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  ProgramRun run;
  const Trace t = traced_run(run);
  std::map<MemKind, int> kinds;
  for (const Alloc& a : t.allocs) ++kinds[a.kind];
  EXPECT_GE(kinds[MemKind::Device], 5) << "cudaMalloc, pitched, async, pool, cuMemMap";
  EXPECT_GE(kinds[MemKind::Pinned], 3) << "cudaMallocHost, cudaHostAlloc, cudaHostRegister";
  EXPECT_GE(kinds[MemKind::Managed], 1);
  const Report r = analyze(t);
  for (const DeviceMemory& m : r.memory.devices)
    EXPECT_TRUE(m.leaked.empty()) << "device " << m.device << ": every allocation of the program is freed";
  bool stream_ordered_free = false;
  for (const Free& f : t.frees) stream_ordered_free |= f.stream != 0;
  EXPECT_TRUE(stream_ordered_free) << "cudaFreeAsync carries its stream";
  for (const Alloc& a : t.allocs) {
    const auto frames = frames_of(t, a.stack);
    ASSERT_FALSE(frames.empty());
    EXPECT_TRUE(frames[0].function.find("main") != std::string::npos ||
                frames[0].function.find("virtual_memory") != std::string::npos)
        << "the first frame is the program's call, not CUDA's or gpudiag's: " << frames[0].function;
  }
}

TEST(CuptiEndToEnd, TheFailedRequestIsAnOutOfMemoryWithTheDevicesCapacity) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  ProgramRun run;
  const Trace t = traced_run(run);
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].requested_bytes, std::uint64_t{1} << 50);
  EXPECT_GT(t.ooms[0].capacity_bytes, 0u);
  const Report r = analyze(t);
  EXPECT_EQ(only(r.findings, "GD008").size(), 1u);
  EXPECT_TRUE(only(r.findings, "GD006").empty()) << "the program checked every status";
}

TEST(CuptiEndToEnd, OnlyTheCallsTheDetectorsReadAreRecordedWithTheGpuWork) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  ProgramRun run;
  const Trace t = traced_run(run);
  for (const ApiCall& a : t.api_calls)
    EXPECT_TRUE(api_kind(t.str(a.name)) != ApiKind::Other || a.status != 0) << t.str(a.name);
  // The program's kernels live in an anonymous namespace: "(anonymous namespace)::fill(float*, float, int)".
  for (const char* k : {"::fill(", "::scale(", "::add("})
    EXPECT_TRUE(std::any_of(t.kernels.begin(), t.kernels.end(),
                            [&](const Kernel& kernel) { return t.str(kernel.name).find(k) != std::string_view::npos; }))
        << k;
  EXPECT_GE(t.memcpys.size(), 5u);
  EXPECT_GE(t.memsets.size(), 1u);
  EXPECT_FALSE(t.syncs.empty());
  ASSERT_FALSE(t.devices.empty());
  EXPECT_GT(t.devices[0].memory_bytes, 0u);
}

}  // namespace
}  // namespace gpudiag
