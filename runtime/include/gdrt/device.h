// Devices: `cpu`, `emu` (an emulated GPU) and `cuda:N`. A Device is a small
// value; the Backend that serves it is looked up in the backend registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gdrt {

enum class DeviceKind : std::uint8_t { cpu, emu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  Device() = default;
  Device(DeviceKind k, int i = 0) : kind(k), index(i) {}
  // Device("cuda:1"), Device("emu"), Device("cpu"), as torch.device.
  explicit Device(std::string_view text) : Device(parse(text)) {}

  // "cpu", "emu", "emu:1", "cuda", "cuda:1"; throws gdrt::Error otherwise.
  static Device parse(std::string_view text);
  // "cpu", "emu:0", "cuda:1".
  std::string str() const;
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  friend bool operator==(const Device&, const Device&) = default;
};

inline Device cpu_device() { return Device{}; }

// The id a device has in gpudiag traces: the host is -1, cuda:N is N (as
// CUPTI numbers it) and emu:N is kEmuTraceDevice + N, so two kinds never
// share a number.
inline constexpr std::int32_t kEmuTraceDevice = 1000;
std::int32_t trace_device_id(const Device& device);

// Whether `device` can run here: its backend is in this build and the
// device works (a GPU and a driver for cuda). Never throws.
bool functional(const Device& device);

// The preferred device: an explicit `requested` string if non-empty, else the
// GDRT_DEVICE environment variable, else the first functional GPU (cuda:0,
// cuda:1, ... as the cuda backend counts them: one that exists but cannot
// run, such as a device in exclusive mode held by another process, is
// passed over), else cpu.
Device preferred_device(std::string_view requested = {});

// Bytes of tensor storage live on `device` now (pinned host buffers are
// host memory and not counted), as torch.cuda.memory_allocated: what the
// program holds, not what the backend keeps cached. Never throws.
std::size_t memory_allocated(const Device& device);

}  // namespace gdrt
