// The programs of tests/gpu_programs, one mistake each (shared/data/gpu/README.md
// and two PyTorch cases), run under the CUPTI injection library on a real GPU.
// Each test checks that the program's one-line summary shows that its mistake
// really did harm, then that the report of its trace gives the rules the
// README expects and, at warning or error, nothing but those and what is also
// true of the program. Needs a GPU and its driver (and, for the PyTorch
// scripts, python3 with a CUDA-enabled PyTorch on PATH); skips with the reason
// otherwise.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "detect_support.h"
#include "test_support.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

std::string cuda_skip_reason() {
  if (std::string(GPU_PROGRAMS_DIR).empty()) return "nvcc was not found at configure time: no CUDA test programs";
  return test::why_no_gpu();
}

std::string torch_skip_reason() {
  if (std::string why = test::why_no_gpu(); !why.empty()) return why;
  const int status = test::run(
      {"/bin/sh", "-c", "exec python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1"});
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "python3 on PATH has no PyTorch that can use the GPU (import torch; torch.cuda.is_available())";
  return "";
}

// A program's exit status and what it printed (stdout and stderr).
struct ProgramRun {
  int status = 0;
  std::string out;
};

// Runs command (argv[0] a path, or a name looked up in PATH) with `env`
// added, its output kept in `out_path`.
ProgramRun run_capturing(const std::string& out_path, const std::vector<std::string>& command,
                         const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" >'" + out_path + "' 2>&1"};
  argv.insert(argv.end(), command.begin(), command.end());
  ProgramRun run;
  run.status = test::run(argv, env);
  run.out = test::read_file(out_path);
  return run;
}

struct TracedRun : ProgramRun {
  Trace trace;
};

// Runs command under the CUPTI injection library, as `gpudiag trace` would,
// and loads its trace.
TracedRun traced_run(const std::string& name, const std::vector<std::string>& command) {
  // temp_path numbers each call: this run's trace is the one file with its prefix.
  const std::string pattern = test::temp_path(name + "-%p.gdtrace");
  TracedRun run;
  // PYTHONPATH: the startup hook that `gpudiag trace` gives Python, which
  // writes PyTorch's allocator history beside the trace.
  static_cast<ProgramRun&>(run) =
      run_capturing(test::temp_path(name + "-output.txt"), command,
                    {"GPUDIAG_TRACE=" + pattern, "CUDA_INJECTION64_PATH=" GPUDIAG_CUPTI_LIBRARY,
                     "PYTHONPATH=" GPUDIAG_PYTHON_HOOK_DIR});
  const auto dir = std::filesystem::path(pattern).parent_path();
  const std::string file_name = std::filesystem::path(pattern).filename().string();
  const std::string stem = file_name.substr(0, file_name.find("%p"));
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(stem) && e.path().extension() == ".gdtrace") file = e.path().string();
  if (file.empty()) throw std::runtime_error("the traced run of " + name + " wrote no trace; it printed: " + run.out);
  run.trace = load_trace(file);
  symbolize(run.trace);
  return run;
}

// The same command run untraced: a symptom that depends on timing (an early
// read seeing stale data) is measured so, since under the tracer the copy
// guard holds that read until the copy has landed.
ProgramRun untraced_run(const std::string& name, const std::vector<std::string>& command) {
  return run_capturing(test::temp_path(name + "-untraced.txt"), command);
}

// `args` also name the run's files, so that two runs of one program keep theirs apart.
TracedRun trace_program(const std::string& name, const std::vector<std::string>& args = {}) {
  std::vector<std::string> command = {std::string(GPU_PROGRAMS_DIR) + "/gpu_program_" + name};
  std::string run_name = name;
  for (const std::string& a : args) {
    command.push_back(a);
    run_name += "_" + a.substr(a.find_first_not_of('-'));
  }
  return traced_run(run_name, command);
}

TracedRun trace_script(const std::string& name) {
  return traced_run(name, {"python3", std::string(GPU_PROGRAMS_SOURCE_DIR) + "/" + name + ".py"});
}

bool exited_with(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }

// The number written right after `key` in a program's output; -1 when the key is absent.
double number_after(const std::string& out, const std::string& key) {
  const auto at = out.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(out.c_str() + at + key.size(), nullptr);
}

bool contains(const std::string& out, const std::string& text) { return out.find(text) != std::string::npos; }

// The report gives every rule of `expect` and, at warning or error, nothing
// outside `expect` and `also_true`. Notes are not judged.
void expect_rules(const Trace& t, const std::set<std::string>& expect, const std::set<std::string>& also_true) {
  const Report r = analyze(t);
  std::set<std::string> reported;
  for (const Finding& f : r.findings) {
    if (f.severity == Severity::Note) continue;
    reported.insert(f.rule_id);
    EXPECT_TRUE(expect.count(f.rule_id) || also_true.count(f.rule_id)) << "untrue " << f.rule_id << ": " << f.message;
  }
  for (const std::string& rule : expect) EXPECT_TRUE(reported.count(rule)) << "missed " << rule;
}

TEST(GpuPrograms, AKernelOnAHostArrayFaultsAndIsGD001) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("host_ptr_kernel");
  if (contains(run.out, "pageable memory access 1"))
    GTEST_SKIP() << "this GPU reaches pageable host memory (HMM): the kernel runs, there is no fault to see: "
                 << run.out;
  EXPECT_TRUE(exited_with(run.status, 1)) << "it prints the error and exits 1: " << run.out;
  EXPECT_TRUE(contains(run.out, "launch 0 ")) << run.out;
  EXPECT_TRUE(contains(run.out, "sync 700 \"an illegal memory access was encountered\"")) << run.out;
  EXPECT_TRUE(contains(run.out, "host array unchanged 1048576/1048576")) << run.out;
  EXPECT_TRUE(run.trace.crashes.empty());
  expect_rules(run.trace, {"GD001"}, {"GD006"});
}

TEST(GpuPrograms, AHostReadOfDeviceMemoryDiesOfSigsegvAndIsGD001) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("host_deref_device");
  if (contains(run.out, "no fault"))
    GTEST_SKIP() << "this system maps device memory on the host: the read does not fault: " << run.out;
  ASSERT_TRUE(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGSEGV)
      << "status " << run.status << ": " << run.out;
  EXPECT_TRUE(contains(run.out, "host_deref_device: reading d[0]")) << run.out;
  ASSERT_FALSE(run.trace.crashes.empty()) << "the crash is recorded";
  EXPECT_EQ(run.trace.crashes[0].signal, SIGSEGV);
  expect_rules(run.trace, {"GD001"}, {"GD007"});
}

TEST(GpuPrograms, ReadingAPinnedCopyBeforeTheSyncIsStaleAndIsGD003AndGD009) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const ProgramRun untraced = untraced_run("unsynced_read", {std::string(GPU_PROGRAMS_DIR) + "/gpu_program_unsynced_read"});
  ASSERT_TRUE(exited_with(untraced.status, 0)) << untraced.out;
  EXPECT_GT(number_after(untraced.out, "unsynced_read: pinned stale "), 0) << untraced.out;
  EXPECT_EQ(number_after(untraced.out, "pageable stale "), 0) << "a pageable copy returns when done: " << untraced.out;
  const TracedRun run = trace_program("unsynced_read");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  expect_rules(run.trace, {"GD003", "GD009"}, {"GD007"});
}

TEST(GpuPrograms, AStreamOrderedFreeUnderAnotherStreamsKernelCorruptsItAndIsGD004) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("freeasync_race");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_GT(number_after(run.out, "freeasync_race: reused "), 0) << "the freed address was handed out again: " << run.out;
  EXPECT_GT(number_after(run.out, "wrong in "), 0) << "the kernel read the new owner's values: " << run.out;
  expect_rules(run.trace, {"GD004"}, {});
}

// A free after cudaStreamQuery reported the reading stream done is ordered
// after its kernel; a query of another stream orders nothing of the reader's.
TEST(GpuPrograms, AFreeOrderedByAStreamQueryOfTheReaderIsNoGD004AndOfAnotherStreamIs) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun reader = trace_program("freeasync_race", {"--poll", "a"});
  ASSERT_TRUE(exited_with(reader.status, 0)) << reader.out;
  EXPECT_EQ(number_after(reader.out, "wrong in "), 0) << "polled until done, the kernel had read src: " << reader.out;
  expect_rules(reader.trace, {}, {});

  const TracedRun other = trace_program("freeasync_race", {"--poll", "b"});
  ASSERT_TRUE(exited_with(other.status, 0)) << other.out;
  EXPECT_GT(number_after(other.out, "wrong in "), 0) << "the kernel read the new owner's values: " << other.out;
  expect_rules(other.trace, {"GD004"}, {});
}

TEST(GpuPrograms, ATebibyteAllocationIsGD008) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("oom");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_TRUE(contains(run.out, "returned 2 cudaErrorMemoryAllocation \"out of memory\"")) << run.out;
  EXPECT_EQ(run.trace.ooms.size(), 1u);
  expect_rules(run.trace, {"GD008"}, {});
}

TEST(GpuPrograms, FiveBuffersNeverFreedAreGD007) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("leak");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_TRUE(contains(run.out, "leak: 5 cudaMalloc of 4 MiB, 0 freed")) << run.out;
  EXPECT_EQ(run.trace.allocs.size(), 5u);
  EXPECT_TRUE(run.trace.frees.empty());
  expect_rules(run.trace, {"GD007"}, {});
}

TEST(GpuPrograms, TwoThousandFourByteReadsAreGD005) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("many_tiny");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_TRUE(contains(run.out, "many_tiny: 2000 reads of 4 B")) << run.out;
  EXPECT_TRUE(contains(run.out, "sum 2000")) << run.out;
  EXPECT_GT(number_after(run.out, "reads of 4 B, "), 0) << "microseconds per read: " << run.out;
  expect_rules(run.trace, {"GD005"}, {"GD007"});
}

TEST(GpuPrograms, PageableAsyncCopiesWaitForQueuedWorkAndAreGD009) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("async_return");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  // ~100 ms of work is queued before each copy: a pageable copy returns after it, a pinned one at once.
  EXPECT_GT(number_after(run.out, "pageable HtoD returned after "), 50) << run.out;
  EXPECT_GT(number_after(run.out, "pageable DtoH after "), 50) << run.out;
  EXPECT_LT(number_after(run.out, "pinned HtoD after "), 50) << run.out;
  EXPECT_LT(number_after(run.out, "pinned DtoH after "), 50) << run.out;
  expect_rules(run.trace, {"GD009"}, {"GD007"});
}

// What gpulint's GD006 launch check rests on: a launch that never started is
// reported by cudaGetLastError, not by the checked calls after it.
TEST(GpuPrograms, ABadLaunchIsSeenOnlyByTheLastErrorNotByTheNextSync) {
  if (const std::string why = cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_program("bad_launch");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_TRUE(contains(run.out, "bad_launch: sync 0 ")) << run.out;
  EXPECT_TRUE(contains(run.out, ", copy 0 ")) << run.out;
  EXPECT_GT(number_after(run.out, "last error "), 0) << run.out;
  EXPECT_TRUE(contains(run.out, "buffer unchanged 4096/4096")) << "the kernel never ran: " << run.out;
  expect_rules(run.trace, {}, {"GD006"});
}

TEST(GpuPrograms, PyTorchReadingANonBlockingCopyBeforeTheSyncIsGD003) {
  if (const std::string why = torch_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const ProgramRun untraced = untraced_run(
      "torch_nonblocking_early_read", {"python3", std::string(GPU_PROGRAMS_SOURCE_DIR) + "/torch_nonblocking_early_read.py"});
  ASSERT_TRUE(exited_with(untraced.status, 0)) << untraced.out;
  EXPECT_GT(number_after(untraced.out, "torch_nonblocking_early_read: stale "), 0) << untraced.out;
  const TracedRun run = trace_script("torch_nonblocking_early_read");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_TRUE(contains(run.out, "pinned True")) << "non_blocking copies to the host land in pinned memory: " << run.out;
  // GD007 is true: the script keeps every step's prediction to compare it after the sync.
  expect_rules(run.trace, {"GD003"}, {"GD007"});
}

TEST(GpuPrograms, PyTorchSideStreamReadingATensorFreedWithoutRecordStreamIsGD004) {
  if (const std::string why = torch_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TracedRun run = trace_script("torch_side_stream_no_record_stream");
  ASSERT_TRUE(exited_with(run.status, 0)) << run.out;
  EXPECT_GT(number_after(run.out, "torch_side_stream_no_record_stream: reused "), 0) << "the main stream got the freed block back: " << run.out;
  EXPECT_GT(number_after(run.out, "corrupted "), 0) << run.out;
  expect_rules(run.trace, {"GD004"}, {});
}

}  // namespace
}  // namespace gpudiag
