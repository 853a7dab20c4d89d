// trace_bench gpu: the PyTorch UNet training step of shared/data/gpu
// (torch_unet_step.py) on a GPU, untraced, traced as `gpudiag trace` traces
// it (the CUPTI injection library, everything on), traced with one part off
// each (stacks, the copy guard: goal <= 5% of the step, kernel arguments,
// runtime callbacks: the deny list, analysed calls only, none), so that each
// part's cost shows apart, and under torch.profiler (CUDA activity only),
// interleaved. Prints the ratios against the untraced run:
// per-step time (median of 100 steps; goal <= 1.05), the whole process
// (goal <= 1.2), and the trace's size per 100 steps (goal <= 10 MB).
// Skips with the reason where there is no GPU or no CUDA-enabled PyTorch.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "python_with_torch.h"
#include "timed_run.h"
#include "torch_unet_overhead.h"

namespace gpudiag::bench {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 100;

struct Variant {
  const char* name;
  const char* key;  // as trace_bench gpu's arguments name it
  std::vector<std::string> extra_args;
  std::vector<std::string> env;
  std::vector<double> step_ms, process_s;
};

// Median step time the script measured, or a negative value when it wrote none.
double median_step_ms(const std::string& out) {
  std::ifstream in(out);
  if (!in) return -1;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("step_ms")) return -1;
  return median(j["step_ms"].get<std::vector<double>>());
}

}  // namespace

bool is_gpu_variant(const std::string& key) {
  for (const char* k : {"full", "stacks", "guard", "args", "deny", "analysed", "nocallbacks", "profiler"})
    if (key == k) return true;
  return false;
}

void torch_unet_overhead(int rounds, const std::vector<std::string>& only) {
  const std::string python = gdrt_bench::python_with_torch();
  const std::string script = GPUDIAG_TORCH_UNET_STEP, library = GPUDIAG_CUPTI_LIBRARY;
  if (library.empty()) {
    std::printf("PyTorch UNet on a GPU: skipped: gpudiag was built without CUDA (no CUPTI injection library)\n");
    return;
  }
  const fs::path dir = fs::temp_directory_path() / ("gpudiag-bench-torch-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "steps.json").string(), trace = (dir / "trace.gdtrace").string();
  const std::vector<std::string> probe = {python, "-c",
                                          "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)"};
  if (const Run r = timed_run(probe, {}); r.status != 0) {
    std::printf("PyTorch UNet on a GPU: skipped: %s\n",
                r.status == 3 ? "PyTorch has no usable CUDA device (no GPU, no driver, or a CPU-only build)"
                              : "python3 cannot import torch");
    fs::remove_all(dir);
    return;
  }
  const std::vector<std::string> traced = {"GPUDIAG_TRACE=" + trace, "CUDA_INJECTION64_PATH=" + library};
  const auto with = [&](std::vector<std::string> env) {
    env.insert(env.begin(), traced.begin(), traced.end());
    return env;
  };
  // Each traced variant turns one part off: the full trace's time minus the
  // variant's is that part's cost.
  std::vector<Variant> all = {
      {"untraced", "untraced", {}, {}, {}, {}},
      {"gpudiag trace (everything on)", "full", {}, with({"GPUDIAG_TRACE_STACKS=on", "GPUDIAG_TRACE_GUARD=on"}), {}, {}},
      {"  stacks off", "stacks", {}, with({"GPUDIAG_TRACE_STACKS=off", "GPUDIAG_TRACE_GUARD=on"}), {}, {}},
      {"  copy guard off", "guard", {}, with({"GPUDIAG_TRACE_STACKS=on", "GPUDIAG_TRACE_GUARD=off"}), {}, {}},
      {"  kernel arguments off", "args", {}, with({"GPUDIAG_TRACE_KERNEL_ARGS=off"}), {}, {}},
      {"  runtime callbacks: deny list", "deny", {}, with({"GPUDIAG_TRACE_API_CALLBACKS=deny"}), {}, {}},
      {"  runtime callbacks: analysed only", "analysed", {}, with({"GPUDIAG_TRACE_API_CALLBACKS=analysed"}), {}, {}},
      {"  no API callbacks at all", "nocallbacks", {}, with({"GPUDIAG_TRACE_API_CALLBACKS=off"}), {}, {}},
      {"torch.profiler (CUDA activity)", "profiler", {"--profiler"}, {}, {}, {}}};
  std::vector<Variant> variants;
  for (const Variant& v : all)
    if (v.key == std::string("untraced") || only.empty() ||
        std::find(only.begin(), only.end(), v.key) != only.end())
      variants.push_back(v);
  // One untimed run first: the first process on a machine pays for loading
  // and caching what every later one finds ready.
  {
    std::vector<std::string> argv = {python, script, "--steps", "5", "--out", out};
    timed_run(argv, {});
  }
  std::uintmax_t trace_bytes = 0;
  for (int round = 0; round < rounds; ++round)
    for (std::size_t k = 0; k < variants.size(); ++k) {
      Variant& v = variants[(k + static_cast<std::size_t>(round)) % variants.size()];
      std::vector<std::string> argv = {python, script, "--steps", std::to_string(kSteps), "--out", out};
      argv.insert(argv.end(), v.extra_args.begin(), v.extra_args.end());
      fs::remove(out);
      const Run r = timed_run(argv, v.env);
      const double step = median_step_ms(out);
      if (r.status != 0 || step < 0) {
        std::printf("PyTorch UNet on a GPU: the %s run failed (exit status %d)\n", v.name, r.status);
        fs::remove_all(dir);
        return;
      }
      v.step_ms.push_back(step);
      v.process_s.push_back(r.wall);
      if (v.key == std::string("full")) trace_bytes = fs::file_size(trace);
    }
  fs::remove_all(dir);
  std::printf("PyTorch UNet training step on a GPU (base 32, depth 4, batch 8 of 3x128x128, %d steps after 10 warm-up),\n"
              "  %d interleaved runs each; medians\n",
              kSteps, rounds);
  // A GPU machine's speed drifts from one process to the next by more than
  // the cost measured (step medians of one variant differed by 25% between
  // two rounds on an H200): each round's ratio is taken against that
  // round's untraced run, and the ratios' median and range are printed.
  const auto ratios = [&](std::vector<double> Variant::*field, const Variant& v) {
    std::vector<double> r;
    for (std::size_t i = 0; i < (v.*field).size(); ++i) r.push_back((v.*field)[i] / (variants[0].*field)[i]);
    return r;
  };
  const Variant* full = nullptr;
  for (const Variant& v : variants)
    if (v.key == std::string("full")) full = &v;
  for (const Variant& v : variants) {
    const bool is_full = &v == full;
    const std::vector<double> step = ratios(&Variant::step_ms, v), process = ratios(&Variant::process_s, v);
    std::printf("  %-34s step %7.2f ms (ratio %.3f, %.3f to %.3f%s), process %6.2f s (ratio %.3f%s)\n", v.name,
                median(v.step_ms), median(step), *std::min_element(step.begin(), step.end()),
                *std::max_element(step.begin(), step.end()), is_full ? ", goal <= 1.05" : "",
                median(v.process_s), median(process), is_full ? ", goal <= 1.2" : "");
    // The part this variant turns off: the full trace's step minus this one's,
    // in the same round, as a share of that round's untraced step.
    if (full != nullptr && !is_full && v.key != std::string("untraced") && v.key != std::string("profiler")) {
      std::vector<double> part;
      for (std::size_t i = 0; i < v.step_ms.size(); ++i)
        part.push_back((full->step_ms[i] - v.step_ms[i]) / variants[0].step_ms[i]);
      std::printf("  %-34s   its part of the full trace: %+.3f of the untraced step (%+.3f to %+.3f)\n", "",
                  median(part), *std::min_element(part.begin(), part.end()), *std::max_element(part.begin(), part.end()));
    }
  }
  std::printf("  trace size: %.1f MB per 100 steps (whole run incl. start-up and warm-up; goal <= 10 MB per 100 steps)\n",
              static_cast<double>(trace_bytes) / 1e6 * 100.0 / kSteps);
}

}  // namespace gpudiag::bench
