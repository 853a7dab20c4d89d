// trace_bench gpu: the PyTorch UNet training step of shared/data/gpu
// (torch_unet_step.py) on a GPU, untraced, traced as `gpudiag trace` traces
// it (the CUPTI injection library, stacks on; with stacks off; with the copy
// guard off, so that its cost shows apart: goal <= 5% of the step) and under
// torch.profiler (CUDA activity only), interleaved. Prints the ratios against the untraced run:
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

namespace gpudiag::bench {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 100;

struct Variant {
  const char* name;
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

void torch_unet_overhead(int rounds) {
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
  std::vector<Variant> variants = {
      {"untraced", {}, {}, {}, {}},
      {"gpudiag trace (stacks on)", {}, {"GPUDIAG_TRACE=" + trace, "GPUDIAG_TRACE_STACKS=on", "GPUDIAG_TRACE_GUARD=on", "CUDA_INJECTION64_PATH=" + library}, {}, {}},
      {"gpudiag trace (stacks off)", {}, {"GPUDIAG_TRACE=" + trace, "GPUDIAG_TRACE_STACKS=off", "GPUDIAG_TRACE_GUARD=on", "CUDA_INJECTION64_PATH=" + library}, {}, {}},
      {"gpudiag trace (copy guard off)", {}, {"GPUDIAG_TRACE=" + trace, "GPUDIAG_TRACE_STACKS=on", "GPUDIAG_TRACE_GUARD=off", "CUDA_INJECTION64_PATH=" + library}, {}, {}},
      {"torch.profiler (CUDA activity)", {"--profiler"}, {}, {}, {}}};
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
      if (&v == &variants[1]) trace_bytes = fs::file_size(trace);
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
  for (const Variant& v : variants) {
    const std::vector<double> step = ratios(&Variant::step_ms, v), process = ratios(&Variant::process_s, v);
    std::printf("  %-32s step %7.2f ms (ratio %.3f, %.3f to %.3f%s), process %6.2f s (ratio %.3f%s)\n", v.name,
                median(v.step_ms), median(step), *std::min_element(step.begin(), step.end()),
                *std::max_element(step.begin(), step.end()), &v == &variants[1] ? ", goal <= 1.05" : "",
                median(v.process_s), median(process), &v == &variants[1] ? ", goal <= 1.2" : "");
  }
  std::printf("  trace size: %.1f MB per 100 steps (whole run incl. start-up and warm-up; goal <= 10 MB per 100 steps)\n",
              static_cast<double>(trace_bytes) / 1e6 * 100.0 / kSteps);
}

}  // namespace gpudiag::bench
