// The real probe: everything is dlopen()ed at run time, so gpudiag runs (and
// says what is missing) on machines without a driver or without CUDA.
#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "gpudiag/doctor/injection.h"
#include "gpudiag/doctor/probe.h"

#if GPUDIAG_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <cuda_runtime_api.h>
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == gpudiag::doctor::kAttributeComputeCapabilityMajor);
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == gpudiag::doctor::kAttributeComputeCapabilityMinor);
#endif

namespace gpudiag::doctor {
namespace {

std::string last_dlerror() {
  const char* e = dlerror();
  return e ? e : "";
}

std::string path_of(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
    return map->l_name;
  }
  return fallback;
}

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// Folders beyond the loader's own search where CUDA libraries usually live.
std::vector<std::string> extra_dirs() {
  std::vector<std::string> dirs;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream in(ld);
    for (std::string dir; std::getline(in, dir, ':');) {
      if (!dir.empty()) dirs.push_back(dir);
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root && *root) dirs.push_back(std::string(root) + "/lib64");
  }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/extras/CUPTI/lib64");
  dirs.push_back("/usr/lib/x86_64-linux-gnu");
  return dirs;
}

// Tries each soname through the loader, then in each folder.
void* open_first(const std::vector<std::string>& sonames, LibraryInfo& info) {
  std::vector<std::string> candidates = sonames;
  for (const auto& dir : extra_dirs()) {
    for (const auto& so : sonames) candidates.push_back(dir + "/" + so);
  }
  for (const auto& candidate : candidates) {
    info.tried.push_back(candidate);
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      info.loaded = true;
      info.library = path_of(handle, candidate);
      return handle;
    }
    info.load_error = last_dlerror();
  }
  return nullptr;
}

class SystemProbe final : public Probe {
 public:
  DriverInfo driver() override {
    // Only the loader's search: the toolkit's lib64/stubs/libcuda.so must not
    // be mistaken for a driver. libcuda stays loaded for the process.
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      DriverInfo info;
      info.load_error = last_dlerror();
      return info;
    }
    DriverApi api;
    api.get_version = symbol<decltype(api.get_version)>(handle, "cuDriverGetVersion");
    api.init = symbol<decltype(api.init)>(handle, "cuInit");
    api.device_count = symbol<decltype(api.device_count)>(handle, "cuDeviceGetCount");
    api.device_get = symbol<decltype(api.device_get)>(handle, "cuDeviceGet");
    api.device_name = symbol<decltype(api.device_name)>(handle, "cuDeviceGetName");
    api.device_attribute = symbol<decltype(api.device_attribute)>(handle, "cuDeviceGetAttribute");
    api.device_total_memory = symbol<decltype(api.device_total_memory)>(handle, "cuDeviceTotalMem_v2");
    DriverInfo info = query_driver(api);
    info.loaded = true;
    info.library = path_of(handle, "libcuda.so.1");
    const std::pair<const char*, bool> required[] = {
        {"cuDriverGetVersion", api.get_version != nullptr}, {"cuInit", api.init != nullptr},
        {"cuDeviceGetCount", api.device_count != nullptr},  {"cuDeviceGet", api.device_get != nullptr},
        {"cuDeviceGetName", api.device_name != nullptr},    {"cuDeviceGetAttribute", api.device_attribute != nullptr},
        {"cuDeviceTotalMem_v2", api.device_total_memory != nullptr}};
    for (const auto& [name, found] : required) {
      if (!found) info.missing_symbols.emplace_back(name);
    }
    return info;
  }

  LibraryInfo cuda_runtime() override {
    LibraryInfo info;
    std::vector<std::string> sonames;
    if (const int built = built_runtime_version(); built > 0) {
      sonames.push_back("libcudart.so." + std::to_string(built / 1000));
    }
    for (const char* so : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
      if (sonames.empty() || sonames.front() != so) sonames.emplace_back(so);
    }
    if (void* handle = open_first(sonames, info)) {
      if (auto get = symbol<int (*)(int*)>(handle, "cudaRuntimeGetVersion")) {
        int version = 0;
        if (get(&version) == 0) info.version = version;
      }
    }
    return info;
  }

  LibraryInfo cudnn() override {
    LibraryInfo info;
    if (void* handle = open_first({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, info)) {
      if (auto get = symbol<std::size_t (*)()>(handle, "cudnnGetVersion")) info.version = static_cast<long long>(get());
      if (auto get = symbol<std::size_t (*)()>(handle, "cudnnGetCudartVersion")) {
        info.cudart_version = static_cast<long long>(get());
      }
    }
    return info;
  }

  LibraryInfo cupti() override {
    LibraryInfo info;
    if (void* handle = open_first({"libcupti.so.13", "libcupti.so.12", "libcupti.so"}, info)) {
      if (auto get = symbol<int (*)(std::uint32_t*)>(handle, "cuptiGetVersion")) {
        std::uint32_t version = 0;
        if (get(&version) == 0) info.version = version;
      }
    }
    return info;
  }

  LibraryInfo injection_library() override {
#if GPUDIAG_HAVE_CUDA_HEADERS
    return check_injection_library(find_injection_library());
#else
    return {};
#endif
  }

  std::optional<std::string> env(const std::string& name) override {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  int built_runtime_version() override {
#if GPUDIAG_HAVE_CUDA_HEADERS
    return CUDART_VERSION;
#else
    return 0;
#endif
  }
};

}  // namespace

std::unique_ptr<Probe> system_probe() { return std::make_unique<SystemProbe>(); }

Facts gather(Probe& probe) {
  Facts facts;
  facts.built_runtime_version = probe.built_runtime_version();
  facts.cuda_visible_devices = probe.env("CUDA_VISIBLE_DEVICES");
  facts.driver = probe.driver();
  facts.cuda_runtime = probe.cuda_runtime();
  facts.cudnn = probe.cudnn();
  facts.cupti = probe.cupti();
  facts.injection_library = probe.injection_library();
  return facts;
}

}  // namespace gpudiag::doctor
