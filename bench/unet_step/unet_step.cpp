// bench/unet_step: one UNet training step (forward, BCE-with-logits,
// backward, Adam) in gdrt and in PyTorch with the same thread count.
// gdrt and PyTorch steps alternate, so both see the same machine load.
// Prints both medians, the gdrt/PyTorch ratio (goal <= 0.8) and gdrt GFLOP/s.
//   unet_step [--threads N] [--steps N] [--base 16] [--depth 4] [--batch 4] [--size 128] [--no-torch]
#include <ctime>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "step_config.h"
#include "gdrt/gdrt.h"
#include "torch_peer.h"

namespace {

using Config = bench::StepConfig;

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

using gdrt_bench::median;
using gdrt_bench::Times;
using bench::process_cpu_seconds;

// gdrt's side: the model, optimiser and batch, one timed step at a time.
class GdrtStep {
 public:
  explicit GdrtStep(const Config& c)
      : model_({3, 1, c.base, c.depth, true, 0}), adam_(model_.named_parameters(), {1e-3}) {
    gdrt::Generator gen(0);
    x_ = gdrt::randn({c.batch, 3, c.size, c.size}, gen);
    t_ = gdrt::gt(gdrt::rand({c.batch, 1, c.size, c.size}, gen), 0.5).to(gdrt::DType::f32);
  }
  Times operator()() {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    adam_.zero_grad();
    gdrt::Tensor loss = gdrt::binary_cross_entropy_with_logits(model_(x_), t_);
    loss.backward();
    adam_.step();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            process_cpu_seconds() - cpu_start};
  }

 private:
  gdrt::nn::UNet model_;
  gdrt::optim::Adam adam_;
  gdrt::Tensor x_, t_;
};

}  // namespace

int main(int argc, char** argv) {
  // PyTorch's OpenMP workers must sleep when idle, as gdrt's pool threads do:
  // spinning teams distort timings on a shared machine. The PyTorch child
  // inherits this; gdrt's libgomp read the environment at load, but gdrt runs
  // oneDNN one thread per pool slice, so no OpenMP team exists to spin.
  ::setenv("OMP_WAIT_POLICY", "passive", 0);
  const Config c = bench::parse_step_config(argc, argv, "unet_step");
  try {
    bench::print_step_config(c);
    std::printf("OMP_WAIT_POLICY=%s for gdrt and pytorch\n", std::getenv("OMP_WAIT_POLICY"));
    gdrt::set_num_threads(c.threads);
    GdrtStep gdrt_step(c);
    gdrt_bench::TorchPeer torch;
    const bool with_torch =
        c.torch && torch.start(GDRT_BENCH_DIR "/unet_step.py",
                               {std::to_string(c.threads), std::to_string(c.base), std::to_string(c.depth),
                                std::to_string(c.batch), std::to_string(c.size)});
    // Two warm-up steps each, then gdrt and PyTorch steps alternate.
    std::vector<double> g_wall, g_cpu, t_wall, t_cpu, ratios;
    for (int i = 0; i < c.steps + 2; ++i) {
      const Times g = gdrt_step();
      const Times t = with_torch ? torch.step() : Times{};
      if (i < 2) continue;
      g_wall.push_back(g.wall);
      g_cpu.push_back(g.cpu);
      if (!with_torch || t.wall <= 0) continue;
      t_wall.push_back(t.wall);
      t_cpu.push_back(t.cpu);
      ratios.push_back(g.wall / t.wall);
    }
    const double g = median(g_wall);
    const double gflops = 3 * forward_flops(c) / g / 1e9;
    std::printf("gdrt     %8.1f ms/step  %6.1f GFLOP/s (conv, ~3x forward)  cpu %8.1f ms/step\n", g * 1e3, gflops,
                median(g_cpu) * 1e3);
    if (!c.torch) return 0;
    if (t_wall.size() != g_wall.size()) {
      std::printf("pytorch  unavailable (no python3 with torch, or it failed); no ratio\n");
      return 0;
    }
    const double t = median(t_wall);
    std::printf("pytorch  %8.1f ms/step                                    cpu %8.1f ms/step\n", t * 1e3,
                median(t_cpu) * 1e3);
    std::printf("ratio gdrt/pytorch = %.2f (goal <= 0.80); median of per-step ratios %.2f; cpu-time ratio %.2f\n",
                g / t, median(ratios), median(g_cpu) / median(t_cpu));
  } catch (const gdrt::Error& e) {
    std::fprintf(stderr, "unet_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
