// bench/unet_step: one UNet training step (forward, BCE-with-logits,
// backward, Adam) in gdrt and in PyTorch with the same thread count.
// Prints both medians, the gdrt/PyTorch ratio (goal <= 0.8) and gdrt GFLOP/s.
//   unet_step [--threads N] [--steps N] [--base 16] [--depth 4] [--batch 4] [--size 128] [--no-torch]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gdrt/gdrt.h"

namespace {

struct Config {
  int threads = 2, steps = 5;
  std::int64_t base = 16, depth = 4, batch = 4, size = 128;
  bool torch = true;
};

// Forward FLOPs of the UNet's convolutions (2 per multiply-add); a training
// step costs about three times that (forward, input and weight gradients).
double forward_flops(const Config& c) {
  double f = 0;
  auto conv = [&](double cin, double cout, double k, double hw) { f += 2 * c.batch * cin * cout * k * k * hw * hw; };
  const double s = static_cast<double>(c.size);
  const double b = static_cast<double>(c.base);
  conv(3, b, 3, s);
  conv(b, b, 3, s);
  for (std::int64_t i = 1; i <= c.depth; ++i) {
    const double hw = s / static_cast<double>(1 << i), cin = b * (1 << (i - 1)), cout = b * (1 << i);
    conv(cin, cout, 3, hw);
    conv(cout, cout, 3, hw);
  }
  for (std::int64_t i = 1; i <= c.depth; ++i) {
    const double cin = b * (1 << (c.depth - i + 1)), cout = b * (1 << (c.depth - i));
    const double hw = s / static_cast<double>(1 << (c.depth - i));
    conv(cin, cin / 2, 2, hw / 2);  // transposed 2x2 stride 2: every input pixel meets 4 taps
    conv(cin, cout, 3, hw);
    conv(cout, cout, 3, hw);
  }
  conv(b, 1, 1, s);
  return f;
}

double gdrt_step_seconds(const Config& c) {
  using namespace gdrt;
  set_num_threads(c.threads);
  nn::UNet model({3, 1, c.base, c.depth, true, 0});
  optim::Adam adam(model.named_parameters(), {1e-3});
  Generator gen(0);
  Tensor x = randn({c.batch, 3, c.size, c.size}, gen);
  Tensor t = gt(rand({c.batch, 1, c.size, c.size}, gen), 0.5).to(DType::f32);
  std::vector<double> times;
  for (int i = 0; i < c.steps + 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    adam.zero_grad();
    Tensor loss = binary_cross_entropy_with_logits(model(x), t);
    loss.backward();
    adam.step();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) times.push_back(sec);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double torch_step_seconds(const Config& c) {
  const std::string cmd = "/usr/bin/python3 " GDRT_BENCH_DIR "/unet_step.py " + std::to_string(c.threads) + " " +
                          std::to_string(c.steps) + " " + std::to_string(c.base) + " " + std::to_string(c.depth) +
                          " " + std::to_string(c.batch) + " " + std::to_string(c.size) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[128] = {0};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  const int rc = ::pclose(p);
  if (!got || rc != 0) return -1;
  return std::atof(buf);
}

}  // namespace

int main(int argc, char** argv) {
  // PyTorch's OpenMP workers must sleep when idle, as gdrt's pool threads do:
  // spinning teams distort timings on a shared machine. The PyTorch child
  // inherits this; gdrt's libgomp read the environment at load, but gdrt runs
  // oneDNN one thread per pool slice, so no OpenMP team exists to spin.
  ::setenv("OMP_WAIT_POLICY", "passive", 0);
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "unet_step: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::strtol(argv[++i], nullptr, 10);
    };
    if (a == "--threads") c.threads = static_cast<int>(next());
    else if (a == "--steps") c.steps = static_cast<int>(next());
    else if (a == "--base") c.base = next();
    else if (a == "--depth") c.depth = next();
    else if (a == "--batch") c.batch = next();
    else if (a == "--size") c.size = next();
    else if (a == "--no-torch") c.torch = false;
    else {
      std::fprintf(stderr, "unet_step: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (c.steps < 1 || c.threads < 1) {
    std::fprintf(stderr, "unet_step: --steps and --threads must be >= 1\n");
    return 2;
  }
  try {
    std::printf("UNet(base %lld, depth %lld), batch %lld, 3x%lldx%lld, BCE-with-logits, Adam, %d threads, median of %d steps\n",
                static_cast<long long>(c.base), static_cast<long long>(c.depth), static_cast<long long>(c.batch),
                static_cast<long long>(c.size), static_cast<long long>(c.size), c.threads, c.steps);
    std::printf("OMP_WAIT_POLICY=%s for gdrt and pytorch\n", std::getenv("OMP_WAIT_POLICY"));
    const double g = gdrt_step_seconds(c);
    const double gflops = 3 * forward_flops(c) / g / 1e9;
    std::printf("gdrt     %8.1f ms/step  %6.1f GFLOP/s (conv, ~3x forward)\n", g * 1e3, gflops);
    if (!c.torch) return 0;
    const double t = torch_step_seconds(c);
    if (t <= 0) {
      std::printf("pytorch  unavailable (/usr/bin/python3 with torch not found); no ratio\n");
      return 0;
    }
    std::printf("pytorch  %8.1f ms/step\n", t * 1e3);
    std::printf("ratio gdrt/pytorch = %.2f (goal <= 0.80)\n", g / t);
  } catch (const gdrt::Error& e) {
    std::fprintf(stderr, "unet_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
