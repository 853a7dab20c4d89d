// A training run long enough to fill a bounded trace many times over: a
// tiny UNet on one fixed batch (emu by default), trained for --steps steps,
// that from step --leak-from on keeps each step's logits with their graph
// alive (a leak that starts late, GD007). Every --every steps it prints one
// line for long_run_bench:
//   at STEP ms_per_step MS rss_kib KIB trace_bytes BYTES
// (the step time is the median over the last --every steps; the trace bytes
// are the files of this process's trace, segments included; 0 untraced).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gdrt/gdrt.h"
#include "gpudiag/record.h"

using namespace gdrt;

namespace {

std::uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6));
  return 0;
}

// The trace file and its segment files (`<trace>.<n>`).
std::uint64_t trace_bytes() {
  namespace fs = std::filesystem;
  const std::string path = gpudiag::rec::trace_path();
  if (path.empty()) return 0;
  const fs::path file(path);
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(file.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name == file.filename().string() || name.starts_with(file.filename().string() + "."))
      total += e.file_size(ec);
  }
  return total;
}

// Kept on purpose: each step's logits, with the graph that made them.
std::vector<Tensor> g_history;

void keep_for_later(const Tensor& logits) { g_history.push_back(logits); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("A long training run of a tiny UNet, with a leak from a given step");
  std::int64_t steps = 100000, leak_from = 50000, every = 1000, size = 32;
  std::string device_name;
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--leak-from", leak_from, "first step that keeps its logits (never: past --steps)");
  app.add_option("--every", every, "steps between two lines")->check(CLI::PositiveNumber);
  app.add_option("--size", size, "image side")->check(CLI::PositiveNumber);
  app.add_option("--device", device_name, "cpu, emu or cuda (default: GDRT_DEVICE, else emu)");
  CLI11_PARSE(app, argc, argv);
  const Device device = preferred_device(device_name.empty() && std::getenv("GDRT_DEVICE") == nullptr ? "emu" : device_name);

  nn::UNet model({.in_channels = 1, .classes = 1, .base = 2, .depth = 1, .batch_norm = false, .seed = 1});
  model.to(device);
  optim::Adam adam(model.named_parameters(), {1e-3});
  Generator gen(7);
  const Tensor input = randn({2, 1, size, size}, gen).to(device);
  const Tensor target = rand({2, 1, size, size}, gen).to(device);

  std::vector<double> ms;
  for (std::int64_t s = 0; s < steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    {
      TrainingStep step;
      adam.zero_grad();
      Tensor logits = model(input);
      Tensor loss = binary_cross_entropy_with_logits(logits, target);
      loss.backward();
      adam.step();
      if (s >= leak_from) keep_for_later(logits);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if ((s + 1) % every == 0 || s + 1 == steps) {
      std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
      std::printf("at %lld ms_per_step %.4f rss_kib %llu trace_bytes %llu\n", static_cast<long long>(s + 1),
                  ms[ms.size() / 2], static_cast<unsigned long long>(resident_kib()),
                  static_cast<unsigned long long>(trace_bytes()));
      std::fflush(stdout);
      ms.clear();
    }
  }
  std::printf("kept %zu steps' logits\n", g_history.size());
  return 0;
}
