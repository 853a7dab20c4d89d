// What `gpudiag doctor` observes about the GPU stack. Probing goes through
// the Probe interface so tests can stand in for drivers and libraries that
// this machine does not have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpudiag::doctor {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t total_memory = 0;  // bytes
  std::string error;               // a query that failed for this device
};

struct DriverInfo {
  bool loaded = false;
  std::string library;     // where libcuda was loaded from
  std::string load_error;  // dlerror() when it was not
  std::vector<std::string> missing_symbols;
  int version = 0;              // cuDriverGetVersion: the newest CUDA it supports (13000 = 13.0); 0 unknown
  int version_result = 0;       // its CUresult
  std::optional<int> init_result;  // cuInit's CUresult; nullopt when not called
  int device_count = 0;
  std::vector<DeviceInfo> devices;
};

struct LibraryInfo {
  bool loaded = false;
  std::string library;               // path it was loaded from
  std::vector<std::string> tried;    // what was tried, in order
  std::string load_error;            // the last dlerror()
  long long version = 0;             // as the library reports it; 0 unknown
  long long cudart_version = 0;      // cuDNN: the CUDA runtime it was built for (cudnnGetCudartVersion)
};

// The driver entry points doctor calls. CUresult and CUdevice are ints in
// the ABI; the real ones come from dlsym, tests pass fakes.
struct DriverApi {
  int (*get_version)(int* version) = nullptr;                             // cuDriverGetVersion
  int (*init)(unsigned flags) = nullptr;                                  // cuInit
  int (*device_count)(int* count) = nullptr;                              // cuDeviceGetCount
  int (*device_get)(int* device, int ordinal) = nullptr;                  // cuDeviceGet
  int (*device_name)(char* name, int length, int device) = nullptr;       // cuDeviceGetName
  int (*device_attribute)(int* value, int attribute, int device) = nullptr;  // cuDeviceGetAttribute
  int (*device_total_memory)(std::size_t* bytes, int device) = nullptr;   // cuDeviceTotalMem_v2
};

// CUdevice_attribute values (cuda.h; stable ABI).
inline constexpr int kAttributeComputeCapabilityMajor = 75;
inline constexpr int kAttributeComputeCapabilityMinor = 76;

// Calls the driver as doctor does: version, cuInit, count, then each device.
// `loaded` and `library` are left to the caller.
DriverInfo query_driver(const DriverApi& api);

class Probe {
 public:
  virtual ~Probe() = default;
  virtual DriverInfo driver() = 0;
  virtual LibraryInfo cuda_runtime() = 0;  // libcudart, cudaRuntimeGetVersion
  virtual LibraryInfo cudnn() = 0;         // libcudnn, cudnnGetVersion, cudnnGetCudartVersion
  virtual LibraryInfo cupti() = 0;         // libcupti, cuptiGetVersion
  // gpudiag's own libgpudiag_cupti.so, loaded as the driver loads it
  // (check_injection_library); not loaded with an empty `tried` when this
  // gpudiag was built without CUDA.
  virtual LibraryInfo injection_library() = 0;
  virtual std::optional<std::string> env(const std::string& name) = 0;
  // CUDART_VERSION of the toolkit gpudiag was built with; 0 when built without CUDA.
  virtual int built_runtime_version() = 0;
};

// The real machine: dlopen()s libcuda.so.1, libcudart, libcudnn, libcupti.
std::unique_ptr<Probe> system_probe();

// Everything doctor looked at.
struct Facts {
  DriverInfo driver;
  LibraryInfo cuda_runtime;
  LibraryInfo cudnn;
  LibraryInfo cupti;
  LibraryInfo injection_library;
  int built_runtime_version = 0;
  std::optional<std::string> cuda_visible_devices;  // nullopt: unset
};

Facts gather(Probe& probe);

}  // namespace gpudiag::doctor
