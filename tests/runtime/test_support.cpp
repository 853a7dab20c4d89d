#include "test_support.h"

#include <cmath>
#include <cstring>

namespace gdrt::test {

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  if (!actual.defined() || !expected.defined()) return ::testing::AssertionFailure() << "undefined tensor";
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  auto a = actual.to(DType::f64).to_vector<double>();
  auto e = expected.to(DType::f64).to_vector<double>();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double excess = std::abs(a[i] - e[i]) - (atol + rtol * std::abs(e[i]));
    if (!(excess <= worst) || std::isnan(a[i]) != std::isnan(e[i])) {
      worst = std::isnan(excess) ? INFINITY : excess;
      at = i;
    }
  }
  if (worst > 0)
    return ::testing::AssertionFailure() << "element " << at << ": " << a[at] << " vs expected " << e[at]
                                         << " (atol " << atol << ", rtol " << rtol << ")";
  return ::testing::AssertionSuccess();
}

const TensorMap& golden(const std::string& file) {
  static std::map<std::string, TensorMap> cache;
  auto it = cache.find(file);
  if (it == cache.end()) it = cache.emplace(file, load_safetensors(std::string(GDRT_GOLDEN_DIR) + "/" + file)).first;
  return it->second;
}

const Tensor& golden_tensor(const std::string& file, const std::string& key) {
  const auto& m = golden(file);
  auto it = m.find(key);
  if (it == m.end()) throw Error("golden file " + file + " has no tensor \"" + key + "\"");
  return it->second;
}

Device emu_device() { return Device{DeviceKind::emu, 0}; }

}  // namespace gdrt::test
