#include "gdrt/device.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "gdrt/backend.h"
#include "core/registration.h"
#include "gdrt/error.h"

namespace gdrt {

Device Device::parse(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Device d;
  if (kind == "cpu") d.kind = DeviceKind::cpu;
  else if (kind == "emu") d.kind = DeviceKind::emu;
  else if (kind == "cuda") d.kind = DeviceKind::cuda;
  else
    throw Error("unknown device \"" + std::string(text) + "\": expected cpu, emu, emu:N, cuda or cuda:N");
  if (colon != std::string_view::npos) {
    const std::string_view idx = text.substr(colon + 1);
    int value = -1;
    auto [ptr, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), value);
    if (idx.empty() || ec != std::errc() || ptr != idx.data() + idx.size() || value < 0 || d.kind == DeviceKind::cpu)
      throw Error("bad device index in \"" + std::string(text) + "\": expected a non-negative number after "
                  "emu: or cuda: (cpu takes no index)");
    d.index = value;
  }
  return d;
}

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::emu: return "emu:" + std::to_string(index);
    case DeviceKind::cuda: return "cuda:" + std::to_string(index);
  }
  return "?";
}

std::int32_t trace_device_id(const Device& d) {
  switch (d.kind) {
    case DeviceKind::cpu: return -1;
    case DeviceKind::cuda: return d.index;
    case DeviceKind::emu: return kEmuTraceDevice + d.index;
  }
  return -1;
}

namespace {
struct Registry {
  std::mutex mutex;
  std::map<DeviceKind, BackendRegistration> registered;
  std::map<std::pair<DeviceKind, int>, std::unique_ptr<Backend>> backends;
};
// Never destroyed: tensors held in other statics may be freed during exit,
// after any ordinary static would be gone, and they need their backend.
Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry;
    for (BackendRegistration& registration : builtin_backends())
      made->registered[registration.kind] = std::move(registration);
    return made;
  }();
  return *r;
}
}  // namespace

void register_backend(DeviceKind kind, BackendFactory factory, DeviceCounter count) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  // The host threads stay those of the kernels this build compiled for the
  // kind: a replaced factory does not take set_num_threads away from them.
  BackendRegistration& slot = r.registered[kind];
  slot = {kind, std::move(factory), std::move(count), std::move(slot.threads)};
}

std::vector<HostThreads> registered_host_threads() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<HostThreads> out;
  for (const auto& [kind, registration] : r.registered)
    if (registration.threads.set) out.push_back(registration.threads);
  return out;
}

bool backend_registered(DeviceKind kind) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return r.registered.count(kind) != 0;
}

Backend& backend(const Device& device) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto key = std::make_pair(device.kind, device.index);
  auto it = r.backends.find(key);
  if (it != r.backends.end()) return *it->second;
  auto f = r.registered.find(device.kind);
  if (f == r.registered.end())
    throw Error("device " + device.str() + " is not available: this build of gdrt has no backend for it "
                "(use cpu, or build with the backend enabled)");
  return *r.backends.emplace(key, f->second.factory(device.index)).first->second;
}

bool functional(const Device& device) {
  if (!backend_registered(device.kind)) return false;
  try {
    return backend(device).functional();
  } catch (const Error&) {
    return false;
  }
}

namespace {
// Devices of `kind` to try, in index order: none without a backend, and
// none when counting fails (a broken driver counts as no device).
int device_count(DeviceKind kind) {
  DeviceCounter count;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.registered.find(kind);
    if (it == r.registered.end()) return 0;
    count = it->second.count;
  }
  if (!count) return 1;
  try {
    return std::max(count(), 0);
  } catch (const Error&) {
    return 0;
  }
}
}  // namespace

Device preferred_device(std::string_view requested) {
  if (!requested.empty()) return Device::parse(requested);
  if (const char* env = std::getenv("GDRT_DEVICE"); env && *env) {
    try {
      return Device::parse(env);
    } catch (const Error& e) {
      throw Error(std::string("GDRT_DEVICE: ") + e.what());
    }
  }
  // The first functional GPU, else the CPU, as documented.
  for (int index = 0, n = device_count(DeviceKind::cuda); index < n; ++index)
    if (const Device gpu{DeviceKind::cuda, index}; functional(gpu)) return gpu;
  return cpu_device();
}

}  // namespace gdrt
