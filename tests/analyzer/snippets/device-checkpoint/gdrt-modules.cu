// gdrt modules: after model.to(device), the data_ptr() of its parameters and
// buffers is device memory. (The declarations mirror runtime/include/gdrt so
// the snippet stands alone.)
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gdrt {
enum class DeviceKind { cpu, emu, cuda };
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  static Device parse(std::string_view text);
};
inline Device cpu_device() { return Device{}; }
Device preferred_device(std::string_view requested = {});
class Tensor {
 public:
  Tensor to(Device device) const;
  std::size_t nbytes() const;
  void* data_ptr() const;
};
namespace nn {
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
class Module {
 public:
  virtual ~Module() = default;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  std::vector<Tensor> parameters() const;
  std::map<std::string, Tensor> state_dict() const;
  void to(Device device);
};
struct UNetOptions {
  int in_channels = 3, classes = 1;
};
class UNet : public Module {
 public:
  explicit UNet(UNetOptions options);
};
}  // namespace nn
void save_checkpoint(const std::string& path, const nn::Module& model);
}  // namespace gdrt

void export_parameters(const char* path) {
  gdrt::nn::UNet model({});
  model.to(gdrt::preferred_device());
  std::FILE* file = std::fopen(path, "wb");
  for (const auto& [name, weight] : model.named_parameters())
    std::fwrite(weight.data_ptr(), 1, weight.nbytes(), file);  // CHECK: GD012
  std::fclose(file);
}

void export_plain_loop(gdrt::nn::Module& model, const char* path) {
  model.to(gdrt::Device::parse("cuda"));
  std::ofstream out(path, std::ios::binary);
  for (const gdrt::Tensor& p : model.parameters())
    out.write(static_cast<const char*>(p.data_ptr()), static_cast<std::streamsize>(p.nbytes()));  // CHECK: GD012
}

void export_state(gdrt::nn::UNet& model, const char* path) {
  model.to(gdrt::preferred_device());
  std::FILE* file = std::fopen(path, "wb");
  for (const auto& entry : model.state_dict())
    std::fwrite(entry.second.data_ptr(), 1, entry.second.nbytes(), file);  // CHECK: GD012
  std::fclose(file);
}

// Fixed: each parameter is copied to the host before its bytes are written.
void export_host_copies(const char* path) {
  gdrt::nn::UNet model({});
  model.to(gdrt::preferred_device());
  std::FILE* file = std::fopen(path, "wb");
  for (const auto& [name, weight] : model.named_parameters()) {
    const gdrt::Tensor host = weight.to(gdrt::cpu_device());
    std::fwrite(host.data_ptr(), 1, host.nbytes(), file);
  }
  std::fclose(file);
}

// Fixed: gdrt's own checkpoint copies to the host.
void checkpoint(const char* path) {
  gdrt::nn::UNet model({});
  model.to(gdrt::preferred_device());
  gdrt::save_checkpoint(path, model);
}

// Tricky negatives: a model this function never moves, and one moved back to the CPU first.
void export_unmoved(const gdrt::nn::Module& model, const char* path) {
  std::FILE* file = std::fopen(path, "wb");
  for (const auto& [name, weight] : model.named_parameters()) std::fwrite(weight.data_ptr(), 1, weight.nbytes(), file);
  std::fclose(file);
}

void export_after_moving_back(const char* path) {
  gdrt::nn::UNet model({});
  model.to(gdrt::preferred_device());
  model.to(gdrt::cpu_device());
  std::FILE* file = std::fopen(path, "wb");
  for (const auto& [name, buffer] : model.named_buffers()) std::fwrite(buffer.data_ptr(), 1, buffer.nbytes(), file);
  std::fclose(file);
}
