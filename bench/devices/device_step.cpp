// bench/devices: what gdrt's accelerator devices cost on bench/unet_step's
// training step (same UNet, shapes, loss and Adam). Two comparisons:
//  - emu against cpu, steps alternating so both see the same machine load:
//    the cost of emulating a GPU (streams as threads, device memory behind
//    its own mapping), printed as the ratio emu/cpu (goal <= 1.3);
//  - one scalar read on emu against the 9 us it took on an H100;
//  - on a GPU, gdrt's cuda step against PyTorch eager on the same GPU
//    (unet_step.py with device cuda), printed as gdrt/pytorch (goal <= 1.0).
//    Without a cuda device it prints why that part was skipped.
//   device_step [--threads N] [--steps N] [--base 16] [--depth 4] [--batch 4] [--size 128] [--no-torch]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "step_config.h"
#include "gdrt/gdrt.h"
#include "torch_peer.h"

namespace {

using gdrt_bench::median;
using gdrt_bench::Times;
using bench::process_cpu_seconds;

using Config = bench::StepConfig;

// The model, optimiser and batch on one device. A step ends when the
// device has finished it, not when its work is queued.
class DeviceStep {
 public:
  DeviceStep(const Config& c, gdrt::Device device)
      : device_(device), model_({3, 1, c.base, c.depth, true, 0}), adam_(init(model_, device), {1e-3}) {
    gdrt::Generator gen(0);
    x_ = gdrt::randn({c.batch, 3, c.size, c.size}, gen).to(device);
    t_ = gdrt::gt(gdrt::rand({c.batch, 1, c.size, c.size}, gen), 0.5).to(gdrt::DType::f32).to(device);
  }
  Times operator()() {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    adam_.zero_grad();
    gdrt::Tensor loss = gdrt::binary_cross_entropy_with_logits(model_(x_), t_);
    loss.backward();
    adam_.step();
    gdrt::synchronize(device_);
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            process_cpu_seconds() - cpu_start};
  }

 private:
  // Moves the model before Adam is built, so its state is made on the device.
  static gdrt::nn::NamedTensors init(gdrt::nn::UNet& model, gdrt::Device device) {
    model.to(device);
    return model.named_parameters();
  }
  gdrt::Device device_;
  gdrt::nn::UNet model_;
  gdrt::optim::Adam adam_;
  gdrt::Tensor x_, t_;
};

// Why `device` cannot run here, or nothing.
std::optional<std::string> unavailable(gdrt::Device device) {
  if (!gdrt::backend_registered(device.kind))
    return "this build of gdrt has no " + device.str() + " backend (configure with GPUDIAG_WITH_CUDA=ON)";
  try {
    if (!gdrt::backend(device).functional()) return device.str() + " has no usable GPU or driver on this machine";
  } catch (const gdrt::Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

void print_times(const char* name, const std::vector<double>& wall, const std::vector<double>& cpu) {
  std::printf("%-8s %8.1f ms/step  cpu %8.1f ms/step\n", name, median(wall) * 1e3, median(cpu) * 1e3);
}

// A metric read from the device one value at a time (item() under
// AllowScalar): what each read costs on emu, against the 9 us a 4-byte
// device-to-host cudaMemcpy took on an H100, which emu copies (GD005's
// symptom). The median of rounds of 1000 reads.
void scalar_reads_against_h100() {
  const gdrt::Device emu{gdrt::DeviceKind::emu, 0};
  if (unavailable(emu)) return;  // emu_against_cpu said why
  constexpr double kH100Us = 9.0;
  constexpr int kReads = 1000;
  const gdrt::Tensor value = gdrt::full({1}, 1.0, gdrt::TensorOptions{}.with_device(emu));
  gdrt::AllowScalar allow;
  std::vector<double> per_read_us;
  double sum = 0;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReads; ++i) sum += value.item();
    per_read_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                          kReads);
  }
  std::printf("emu:0 scalar read %.1f us (sum %.0f); ratio emu/H100 = %.2f (H100: %.1f us per 4-byte read)\n",
              median(per_read_us), sum, median(per_read_us) / kH100Us, kH100Us);
}

// emu against cpu: two warm-up steps each, then they alternate.
void emu_against_cpu(const Config& c) {
  const gdrt::Device emu{gdrt::DeviceKind::emu, 0};
  if (auto why = unavailable(emu)) {
    std::printf("emu/cpu: skipped: %s\n", why->c_str());
    return;
  }
  DeviceStep cpu_step(c, gdrt::cpu_device()), emu_step(c, emu);
  std::vector<double> c_wall, c_cpu, e_wall, e_cpu, ratios;
  for (int i = 0; i < c.steps + 2; ++i) {
    const Times a = cpu_step(), b = emu_step();
    if (i < 2) continue;
    c_wall.push_back(a.wall), c_cpu.push_back(a.cpu);
    e_wall.push_back(b.wall), e_cpu.push_back(b.cpu);
    ratios.push_back(b.wall / a.wall);
  }
  print_times("cpu", c_wall, c_cpu);
  print_times("emu:0", e_wall, e_cpu);
  std::printf("ratio emu/cpu = %.2f (goal <= 1.30); median of per-step ratios %.2f; cpu-time ratio %.2f\n",
              median(e_wall) / median(c_wall), median(ratios), median(e_cpu) / median(c_cpu));
}

// gdrt on cuda against PyTorch eager on the same GPU, steps alternating.
void cuda_against_pytorch(const Config& c) {
  const gdrt::Device cuda{gdrt::DeviceKind::cuda, 0};
  if (auto why = unavailable(cuda)) {
    std::printf("cuda/pytorch: skipped: %s\n", why->c_str());
    return;
  }
  DeviceStep gdrt_step(c, cuda);
  gdrt_bench::TorchPeer torch;
  const bool with_torch =
      c.torch && torch.start(GDRT_UNET_STEP_DIR "/unet_step.py",
                             {std::to_string(c.threads), std::to_string(c.base), std::to_string(c.depth),
                              std::to_string(c.batch), std::to_string(c.size), "cuda"});
  std::vector<double> g_wall, g_cpu, t_wall, t_cpu, ratios;
  for (int i = 0; i < c.steps + 2; ++i) {
    const Times g = gdrt_step();
    const Times t = with_torch ? torch.step() : Times{};
    if (i < 2) continue;
    g_wall.push_back(g.wall), g_cpu.push_back(g.cpu);
    if (!with_torch || t.wall <= 0) continue;
    t_wall.push_back(t.wall), t_cpu.push_back(t.cpu);
    ratios.push_back(g.wall / t.wall);
  }
  print_times("cuda:0", g_wall, g_cpu);
  if (!c.torch) return;
  if (t_wall.size() != g_wall.size()) {
    std::printf("pytorch  unavailable (no python3 with CUDA-enabled torch, or it failed); no ratio\n");
    return;
  }
  print_times("pytorch", t_wall, t_cpu);
  std::printf("ratio gdrt-cuda/pytorch-cuda = %.2f (goal <= 1.00); median of per-step ratios %.2f\n",
              median(g_wall) / median(t_wall), median(ratios));
}

}  // namespace

int main(int argc, char** argv) {
  // Idle OpenMP workers sleep, as in bench/unet_step: spinning teams distort
  // timings on a shared machine.
  ::setenv("OMP_WAIT_POLICY", "passive", 0);
  const Config c = bench::parse_step_config(argc, argv, "device_step");
  try {
    bench::print_step_config(c);
    gdrt::set_num_threads(c.threads);
    emu_against_cpu(c);
    scalar_reads_against_h100();
    cuda_against_pytorch(c);
  } catch (const gdrt::Error& e) {
    std::fprintf(stderr, "device_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
