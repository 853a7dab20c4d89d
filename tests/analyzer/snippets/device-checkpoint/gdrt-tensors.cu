// gdrt tensors: data_ptr() of a tensor on a GPU device is device memory.
// (The declarations mirror runtime/include/gdrt so the snippet stands alone.)
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

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
using TensorMap = std::map<std::string, Tensor>;
void save_safetensors(const std::string& path, const TensorMap& tensors);
}  // namespace gdrt

void dump_on_device(const gdrt::Tensor& weights, const char* path) {
  const gdrt::Device device = gdrt::preferred_device();
  gdrt::Tensor placed = weights.to(device);
  FILE* file = std::fopen(path, "wb");
  std::fwrite(placed.data_ptr(), 1, placed.nbytes(), file);  // CHECK: GD012
  std::fclose(file);
}

void stream_moved_tensor(const gdrt::Tensor& weights, const char* path) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(weights.to(gdrt::Device::parse("cuda")).data_ptr()),  // CHECK: GD012
            static_cast<std::streamsize>(weights.nbytes()));
}

// Fixed: moved to the CPU before its bytes are written.
void dump_on_cpu(const gdrt::Tensor& weights, const char* path) {
  const gdrt::Device device = gdrt::preferred_device();
  gdrt::Tensor placed = weights.to(device);
  gdrt::Tensor host = placed.to(gdrt::cpu_device());
  FILE* file = std::fopen(path, "wb");
  std::fwrite(host.data_ptr(), 1, host.nbytes(), file);
  std::fclose(file);
}

// Fixed: gdrt's own save copies to the host and records no device.
void save_from_device(const gdrt::Tensor& weights, const char* path) {
  gdrt::Tensor placed = weights.to(gdrt::preferred_device());
  gdrt::save_safetensors(path, {{"weights", placed}});
}

// Tricky negative: moved to the device, then back to the host with Device{}.
void round_trip(const gdrt::Tensor& weights, const char* path) {
  gdrt::Tensor t = weights.to(gdrt::Device::parse("emu"));
  t = t.to(gdrt::Device{});
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
}
