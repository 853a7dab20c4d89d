#include "device_compare.h"

#include <cmath>

#include "test_support.h"

namespace gdrt::test {

std::vector<Device> accelerator_devices() { return {Device{DeviceKind::emu, 0}, Device{DeviceKind::cuda, 0}}; }

std::optional<std::string> device_unavailable(const Device& device) {
  if (!backend_registered(device.kind)) return "this build of gdrt has no " + device_label(device) + " backend";
  try {
    if (!backend(device).functional()) return device.str() + " is built in but not functional on this machine";
  } catch (const Error& e) {
    return device.str() + " cannot be created: " + e.what();
  }
  return std::nullopt;
}

std::string device_label(const Device& device) {
  const std::string s = device.str();
  return s.substr(0, s.find(':'));
}

::testing::AssertionResult matches_cpu(const Tensor& on_device, const Tensor& on_cpu, const Device& device,
                                       Tolerance tol) {
  if (!on_device.defined() || !on_cpu.defined())
    return ::testing::AssertionFailure() << (on_device.defined() ? "cpu" : device.str()) << " result is undefined";
  if (on_device.device() != device)
    return ::testing::AssertionFailure() << "result is on " << on_device.device().str() << ", not " << device.str();
  if (on_device.dtype() != on_cpu.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(on_device.dtype()) << " vs cpu's "
                                         << dtype_name(on_cpu.dtype());
  const Tensor host = on_device.to(cpu_device());
  if (host.shape() == on_cpu.shape()) {
    // A NaN the cpu does not produce is most often an element no kernel wrote.
    const auto a = host.to(DType::f64).to_vector<double>(), e = on_cpu.to(DType::f64).to_vector<double>();
    std::size_t count = 0, first = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::isnan(a[i]) && !std::isnan(e[i]) && count++ == 0) first = i;
    if (count)
      return ::testing::AssertionFailure() << count << " of " << a.size() << " elements are NaN on " << device.str()
                                           << " but not on cpu (first at flat index " << first
                                           << "): unwritten or wrongly computed";
  }
  return all_close(host, on_cpu, tol.atol, tol.rtol);
}

}  // namespace gdrt::test
