// The detectors on real traces recorded on real GPUs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "detect_support.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

std::string trace_path(const char* name) {
  return std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/" + name;
}

TEST(RealTraces, PageableCopiesOfV100ResNet50AreGD009) {
  const std::string path = trace_path("v100-resnet50.trace.json.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  const Report r = analyze(t);
  const auto f = only(r.findings, "GD009");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("12 asynchronous HtoD copies"), std::string::npos) << f[0].message;
  // Unknown addresses (this Kineto version records none) never make use-after-free reports.
  EXPECT_TRUE(only(r.findings, "GD004").empty());
  // Memory: both devices tracked, the device peak above 1 GiB (ResNet-50 training activations).
  ASSERT_NE(r.memory.device(0), nullptr);
  EXPECT_GT(r.memory.device(0)->peak_bytes, 1ull << 30);
}

TEST(RealTraces, H100VitIsLaunchBoundAndHasNoFloat64) {
  const std::string path = trace_path("h100-vit-falconsai.trace.json.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  EXPECT_EQ(only(r.findings, "GD011").size(), 1u);
  EXPECT_TRUE(only(r.findings, "GD002").empty());
  ASSERT_NE(r.memory.device(0), nullptr);
  EXPECT_GT(r.memory.device(0)->peak_reserved, 0u);  // Kineto's Total Reserved
}

// A profile of one inference step (a ViT's forward pass): the step is the
// window, not its 12 layers, and the GPU time over it is TraceLens's, whose
// timeline of the same trace is stored beside it.
TEST(RealTraces, OneProfiledInferenceStepIsOneIterationAndItsBusyShareIsTraceLenss) {
  const std::string path = trace_path("h100-vit-falconsai.trace.json.gz");
  std::ifstream csv(trace_path("h100-vit-falconsai.tracelens-gpu_timeline.csv"));
  if (!std::filesystem::exists(path) || !csv) GTEST_SKIP() << "no " << path;
  std::map<std::string, double> tracelens_ms;
  for (std::string line; std::getline(csv, line);)
    if (const auto comma = line.find(','); comma != std::string::npos && line.substr(0, comma) != "type")
      tracelens_ms[line.substr(0, comma)] = std::stod(line.substr(comma + 1));
  const Trace t = load_trace(path);
  const Report r = analyze(t);
  EXPECT_EQ(r.phases.source, "profiler steps");
  EXPECT_EQ(r.phases.iterations.size(), 1u);
  EXPECT_EQ(r.phases.startup_ns(), 0u);
  ASSERT_EQ(r.gpu_time.size(), 1u);
  const GpuTime& g = r.gpu_time[0];
  const double share = static_cast<double>(g.busy_ns) / static_cast<double>(g.total_ns);
  EXPECT_NEAR(share, tracelens_ms.at("busy_time") / tracelens_ms.at("total_time"), 0.001);
  EXPECT_NEAR(static_cast<double>(g.total_ns) / 1e6, tracelens_ms.at("total_time"), 0.01 * tracelens_ms.at("total_time"));
  const nlohmann::json j = report_json(t, r);
  EXPECT_EQ(j["phases"]["iterations"], 1);
  EXPECT_EQ(j["phases"]["startup_ns"], 0);
  const auto f = only(r.findings, "GD011");
  ASSERT_EQ(f.size(), 1u);
  char idle[32];
  std::snprintf(idle, sizeof idle, "was idle %.1f%% of ", 100 * (1 - share));
  EXPECT_NE(f[0].message.find(idle), std::string::npos) << f[0].message;
}

TEST(RealTraces, EveryRealTraceAnalysesWithoutError) {
  const std::string dir = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().find(".trace.json") == std::string::npos) continue;
    const Trace t = load_trace(e.path().string());
    const Report r = analyze(t);
    EXPECT_FALSE(r.gpu_time.empty()) << e.path();
    ++n;
  }
  EXPECT_GE(n, 4);
}

// gpudiag's own traces of small CUDA programs on an H100 (shared/data/gpu/README.md).
std::string gpu_trace(const char* name) { return std::string(GPUDIAG_SHARED_DATA_DIR) + "/gpu/" + name; }

TEST(RealGpuTraces, AGzippedGdtraceLoadsAsItself) {
  const std::string path = gpu_trace("h100-cuda-leak.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  EXPECT_EQ(t.source, TraceSource::Gdtrace);
  EXPECT_EQ(t.allocs.size(), 5u);
}

TEST(RealGpuTraces, AnAllocationOutOfMemoryIsGD008NotAnUncheckedError) {
  const std::string path = gpu_trace("h100-cuda-oom.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  const auto oom = only(r.findings, "GD008");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_NE(oom[0].message.find("out of memory on device 0"), std::string::npos) << oom[0].message;
  // The program read cudaGetLastError after the failure: that is checking, not ignoring.
  EXPECT_TRUE(only(r.findings, "GD006").empty()) << only(r.findings, "GD006").front().message;
}

TEST(RealGpuTraces, AnIllegalAddressNamesTheFirstCallThatReportedItAndTheKernelLaunchedBefore) {
  const std::string path = gpu_trace("h100-cuda-host_ptr_kernel.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Report r = analyze(load_trace(path));
  const auto f = only(r.findings, "GD006");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("cudaDeviceSynchronize"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("error 700 \"an illegal memory access was encountered\": a kernel launched earlier"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("newest first: scale("), std::string::npos) << f[0].message;
}

// Precision and recall on every trace of shared/data/gpu, against its
// README: each run gives the rule of its mistake ("expect") and, at warning or
// error, nothing but that and what is also true of the program. A healthy run
// gives no warning. Notes (GD011 on a launch-bound loop) are not judged.
// Four mistakes cannot be seen in these recordings, made before the tracer
// recorded them: a host dereference's crash (host_deref_device, GD001), the
// pointers a kernel was given (host_ptr_kernel GD001, freeasync_race GD004),
// and host reads of a guarded copy destination (unsynced_read GD003). The
// same programs recorded again on an H200 give them (RecordedAgainOnAnH200).
struct Expected {
  const char* file;
  std::set<std::string> expect;      // must be reported
  std::set<std::string> also_true;   // may be reported
  std::set<std::string> as_note = {};  // must be reported, as a note: what it cost in this run is below its threshold
};

// Checks each run of `runs` in `dir` against its expectations; true when
// every trace was there to check.
bool check_runs(const std::string& dir, const std::vector<Expected>& runs) {
  int checked = 0;
  for (const Expected& run : runs) {
    const std::string path = dir + "/" + run.file;
    if (!std::filesystem::exists(path)) continue;
    SCOPED_TRACE(run.file);
    ++checked;
    const Report r = analyze(load_trace(path));
    std::set<std::string> reported, noted;
    for (const Finding& f : r.findings) {
      if (f.severity == Severity::Note) noted.insert(f.rule_id);
      if (f.severity == Severity::Note) continue;
      reported.insert(f.rule_id);
      EXPECT_TRUE(run.expect.count(f.rule_id) || run.also_true.count(f.rule_id))
          << "untrue " << f.rule_id << ": " << f.message;
    }
    for (const std::string& rule : run.expect) EXPECT_TRUE(reported.count(rule)) << "missed " << rule;
    for (const std::string& rule : run.as_note) EXPECT_TRUE(noted.count(rule)) << "missed the note " << rule;
  }
  return checked == static_cast<int>(runs.size());
}

TEST(RealGpuTraces, EachRunGivesItsRuleAndNoUntrueWarning) {
  const std::vector<Expected> runs = {
      {"h100-cuda-host_ptr_kernel.gdtrace.gz", {"GD006"}, {}},
      {"h100-cuda-host_deref_device.gdtrace.gz", {}, {"GD007"}},
      {"h100-cuda-unsynced_read.gdtrace.gz", {"GD009"}, {"GD007"}},
      {"h100-cuda-freeasync_race.gdtrace.gz", {}, {}},
      {"h100-cuda-oom.gdtrace.gz", {"GD008"}, {}},
      {"h100-cuda-leak.gdtrace.gz", {"GD007"}, {}},
      {"h100-cuda-many_tiny.gdtrace.gz", {"GD005"}, {"GD007"}},
      {"h100-cuda-async_return.gdtrace.gz", {"GD009"}, {"GD007"}},
      {"h100-torch-unet-healthy.gdtrace.gz", {}, {}},
      {"h100-torch-unet-healthy.kineto.json.gz", {}, {}},
      // loss.item() every step is a blocking scalar read in the loop: GD005 is true of it.
      {"h100-torch-unet-sync_in_loop.gdtrace.gz", {"GD010"}, {"GD005"}},
      // Four profiled steps, the profiler the host's bottleneck: its 12 syncs a
      // step blocked it 2% of the loop, below the share that makes a warning.
      {"h100-torch-unet-sync_in_loop.kineto.json.gz", {}, {"GD005"}, {"GD010"}},
      {"h100-torch-unet-pageable_async.gdtrace.gz", {"GD009"}, {}},
      {"h100-torch-unet-pageable_async.kineto.json.gz", {"GD009"}, {}},
  };
  const std::string dir = std::string(GPUDIAG_SHARED_DATA_DIR) + "/gpu";
  if (!std::filesystem::exists(dir + "/" + runs.front().file)) GTEST_SKIP() << "no traces in " << dir;
  EXPECT_TRUE(check_runs(dir, runs)) << "a trace is missing";
}

// The same programs recorded on an H200 with kernel arguments, the copy
// guard and crash records (tests/data/h200/README.md): every mistake is
// named, the four the H100 recordings could not show included.
TEST(RealGpuTraces, RecordedAgainOnAnH200) {
  const std::vector<Expected> runs = {
      {"h200-cuda-host_ptr_kernel.gdtrace.gz", {"GD001", "GD006"}, {}},
      {"h200-cuda-host_deref_device.gdtrace.gz", {"GD001"}, {"GD007"}},
      {"h200-cuda-unsynced_read.gdtrace.gz", {"GD003", "GD009"}, {"GD007"}},
      {"h200-cuda-freeasync_race.gdtrace.gz", {"GD004"}, {}},
      {"h200-cuda-oom.gdtrace.gz", {"GD008"}, {}},
      {"h200-cuda-leak.gdtrace.gz", {"GD007"}, {}},
      {"h200-cuda-many_tiny.gdtrace.gz", {"GD005"}, {"GD007"}},
      {"h200-cuda-async_return.gdtrace.gz", {"GD009"}, {"GD007"}},
      {"h200-cuda-bad_launch.gdtrace.gz", {"GD006"}, {}},
      {"h200-gdrt-train_unet.gdtrace.gz", {}, {}},
  };
  EXPECT_TRUE(check_runs(std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/h200", runs)) << "a trace is missing";
}

TEST(RealGpuTraces, StartUpIsReportedAsStartUpNotIdleness) {
  const std::string path = gpu_trace("h100-torch-unet-healthy.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  const Report r = analyze(t);
  ASSERT_TRUE(r.phases.has_loop());
  EXPECT_GE(r.phases.iterations.size(), 15u) << "20 steps, the first autotuning";
  EXPECT_GT(r.phases.startup_ns(), 10'000'000'000u) << "module loading and cuDNN autotuning";
  const auto f = only(r.findings, "GD011");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.find("idle gap"), std::string::npos) << "start-up counted as idleness: " << f[0].message;
  EXPECT_NE(f[0].message.find("before the first iteration are not counted"), std::string::npos);
  // The GPU time breakdown is the loop's: the GPU was busy a third of it,
  // not 0.8% of 21.7 s from its first work in start-up to its last.
  ASSERT_EQ(r.gpu_time.size(), 1u);
  const GpuTime& g = r.gpu_time[0];
  EXPECT_TRUE(g.windowed);
  EXPECT_EQ(g.total_ns, r.phases.steady().length());
  EXPECT_GT(g.busy_ns, g.total_ns / 5) << g.busy_ns << " of " << g.total_ns;
  EXPECT_GT(g.before_window_ns, 10'000'000'000u);
  std::ostringstream summary;
  print_summary(summary, t, r, {});
  EXPECT_NE(summary.str().find("training loop: "), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("of start-up before it"), std::string::npos) << summary.str();
  const nlohmann::json j = report_json(t, r);
  EXPECT_EQ(j["gpu_time"][0]["window"], "training loop");
}

// The recorder wrote CUPTI's synchronisation records from its own thread;
// read back, each is on the thread that waited: one that launched kernels
// (PyTorch launches the backward pass from its autograd thread).
TEST(RealGpuTraces, SyncsAreOnTheThreadThatWaited) {
  const std::string path = gpu_trace("h100-torch-unet-sync_in_loop.gdtrace.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Trace t = load_trace(path);
  std::set<std::uint32_t> launching;
  for (const ApiCall& a : t.api_calls)
    if (api_kind(t.str(a.name)) == ApiKind::Launch) launching.insert(a.tid);
  ASSERT_GT(t.syncs.size(), 1000u);
  for (const Sync& s : t.syncs) ASSERT_TRUE(launching.count(s.tid)) << "a sync at " << s.start_ns << " ns on thread " << s.tid;
}

// The figures of each report on others' real traces, against the same
// figures computed here from the JSON itself: the trace's span, its kernel
// count, the GPU's busy share as TraceLens defines it (the union of kernel,
// copy and memset intervals over the window the report states), and the
// iterations where the trace has profiler steps.
struct Figures {
  double begin_us = 0, end_us = 0;
  std::size_t kernels = 0;
  std::size_t steps = 0;
  double busy_share = 0;
};

nlohmann::json read_gzipped_json(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return {};
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  gzclose(f);
  return nlohmann::json::parse(text);
}

double number(const nlohmann::json& v) { return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>(); }

Figures figures_of(const nlohmann::json& doc, double window_begin_us, double window_end_us) {
  static const std::set<std::string> gpu = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"};
  static const std::set<std::string> read = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset",
                                             "cuda_runtime", "Runtime", "cuda_driver", "cuda_sync"};
  Figures f;
  f.begin_us = 1e300;
  std::vector<std::pair<double, double>> busy;
  std::set<std::string> step_names;
  for (const auto& e : doc.at("traceEvents")) {
    if (!e.is_object() || !e.contains("ts")) continue;
    const std::string ph = e.value("ph", ""), cat = e.value("cat", ""), name = e.value("name", "");
    const double ts = number(e.at("ts")), end = ts + (e.contains("dur") ? number(e.at("dur")) : 0.0);
    const bool step = ph == "X" && name.starts_with("ProfilerStep#");
    const bool counted = (ph == "X" && read.count(cat)) || ((ph == "i" || ph == "I") && (name == "[memory]" || name == "[OutOfMemory]")) ||
                         (step && cat != "gpu_user_annotation");
    if (counted) f.begin_us = std::min(f.begin_us, ts), f.end_us = std::max(f.end_us, end);
    if (ph == "X" && (cat == "kernel" || cat == "Kernel")) ++f.kernels;
    if (ph == "X" && gpu.count(cat)) busy.emplace_back(ts, end);
    if (step && cat != "gpu_user_annotation") step_names.insert(name);
  }
  f.steps = step_names.size();
  const double lo = window_begin_us, hi = window_end_us;
  std::sort(busy.begin(), busy.end());
  double covered = 0, reach = lo;
  for (auto [a, b] : busy) {
    a = std::max(a, reach), b = std::min(b, hi);
    if (b > a) covered += b - a, reach = b;
  }
  f.busy_share = covered / (hi - lo);
  return f;
}

std::vector<std::string> others_real_traces() {
  std::vector<std::string> out;
  for (const std::string& dir : {std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces", std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/real"}) {
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().string().ends_with(".trace.json.gz")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RealTraces, EachReportsFiguresAgreeWithTheTraceItself) {
  const std::vector<std::string> paths = others_real_traces();
  ASSERT_GE(paths.size(), 2u) << "tests/data/real holds two";
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const Trace t = load_trace(path);
    const Report r = analyze(t);
    ASSERT_EQ(r.gpu_time.size(), 1u);
    const GpuTime& g = r.gpu_time[0];
    const Figures want = figures_of(read_gzipped_json(path), static_cast<double>(g.begin_ns) / 1e3,
                                    static_cast<double>(g.begin_ns + g.total_ns) / 1e3);
    EXPECT_NEAR(static_cast<double>(t.end_ns() - t.begin_ns()) / 1e3, want.end_us - want.begin_us, 1.0) << "the span";
    EXPECT_EQ(t.kernels.size(), want.kernels);
    if (want.steps > 0) {
      EXPECT_EQ(r.phases.iterations.size(), want.steps) << "one iteration per profiler step, and no other";
      EXPECT_EQ(r.phases.source, "profiler steps");
    }
    EXPECT_NEAR(static_cast<double>(g.busy_ns) / static_cast<double>(g.total_ns), want.busy_share, 0.001)
        << "the busy share, TraceLens's definition";
  }
}

// TraceLens's own figures for the Qwen trace. Its window is the step's GPU
// annotation (34.9 ms); the report's, the GPU work the step launched (49.3
// ms: the 509 kernels and memsets that ran before that annotation begins
// too): the busy shares agree within a point.
TEST(RealTraces, QwenInferenceIsOneStepBusyAsTraceLensSays) {
  const std::string path = std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/real/h100-qwen1.5-0.5b.trace.json.gz";
  const Report r = analyze(load_trace(path));
  ASSERT_EQ(r.phases.iterations.size(), 1u) << "its 24 layers are no iterations";
  EXPECT_EQ(r.phases.startup_ns(), 0u) << "the embedding and the first layers are no start-up";
  ASSERT_EQ(r.gpu_time.size(), 1u);
  EXPECT_NEAR(static_cast<double>(r.gpu_time[0].busy_ns) / static_cast<double>(r.gpu_time[0].total_ns), 0.9144, 0.01)
      << "TraceLens's busy_time share";
}

// Two kernels 100 ms apart, written in microseconds since the epoch with
// nanosecond decimals, are 100 ms apart in the report.
TEST(RealTraces, NanosecondDecimalTimestampsKeepTheRunsLength) {
  const std::string path = std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/real/hta-ns-resolution-rank0.trace.json.gz";
  const Trace t = load_trace(path);
  EXPECT_EQ(t.kernels.size(), 4350u);
  const Report r = analyze(t);
  EXPECT_EQ(r.phases.iterations.size(), 5u);
  std::ostringstream summary;
  print_summary(summary, t, r, {});
  EXPECT_EQ(summary.str().find(" 0 ns each"), std::string::npos) << summary.str();
  ASSERT_EQ(r.gpu_time.size(), 1u);
  EXPECT_GT(r.gpu_time[0].kernel_ns, 100'000'000u) << "kernel time is no longer lost";
}

}  // namespace
}  // namespace gpudiag
