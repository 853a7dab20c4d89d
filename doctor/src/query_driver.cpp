// Asks the driver what doctor reports, stopping where the driver says no.
#include <array>

#include "gpudiag/doctor/probe.h"

namespace gpudiag::doctor {

DriverInfo query_driver(const DriverApi& api) {
  DriverInfo info;
  if (api.get_version != nullptr) info.version_result = api.get_version(&info.version);
  if (api.init == nullptr) return info;
  info.init_result = api.init(0);
  if (*info.init_result != 0 || api.device_count == nullptr) return info;
  if (api.device_count(&info.device_count) != 0) info.device_count = 0;

  for (int ordinal = 0; ordinal < info.device_count; ++ordinal) {
    DeviceInfo device;
    device.ordinal = ordinal;
    int handle = 0;
    if (api.device_get == nullptr || api.device_get(&handle, ordinal) != 0) {
      device.error = "cuDeviceGet failed";
      info.devices.push_back(device);
      continue;
    }
    if (api.device_name != nullptr) {
      std::array<char, 256> name{};
      if (api.device_name(name.data(), static_cast<int>(name.size()), handle) == 0) {
        name.back() = '\0';
        device.name = name.data();
      } else {
        device.error = "cuDeviceGetName failed";
      }
    }
    if (api.device_attribute != nullptr) {
      if (api.device_attribute(&device.cc_major, kAttributeComputeCapabilityMajor, handle) != 0 ||
          api.device_attribute(&device.cc_minor, kAttributeComputeCapabilityMinor, handle) != 0) {
        device.error = "cuDeviceGetAttribute(compute capability) failed";
      }
    }
    if (api.device_total_memory != nullptr) {
      std::size_t bytes = 0;
      if (api.device_total_memory(&bytes, handle) == 0) {
        device.total_memory = bytes;
      } else {
        device.error = "cuDeviceTotalMem failed";
      }
    }
    info.devices.push_back(device);
  }
  return info;
}

}  // namespace gpudiag::doctor
