// gdrt tensors: item() and at() on a device tensor are blocking one-element
// copies, so in a host loop they read device memory element by element.
// (The declarations mirror runtime/include/gdrt so the snippet stands alone.)
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace gdrt {
class Tensor {
 public:
  std::int64_t size(std::int64_t d) const;
  double item() const;
  double at(std::initializer_list<std::int64_t> index) const;
  template <class T> std::vector<T> to_vector() const;
};
Tensor sum(const Tensor& x);
}  // namespace gdrt

double pixel_accuracy(const gdrt::Tensor& mask, const gdrt::Tensor& target) {
  double hits = 0;
  for (std::int64_t y = 0; y < mask.size(0); ++y)
    for (std::int64_t x = 0; x < mask.size(1); ++x)
      hits += mask.at({y, x}) == target.at({y, x});  // CHECK: GD005
  return hits / static_cast<double>(mask.size(0) * mask.size(1));
}

double mean_loss(const std::vector<gdrt::Tensor>& losses) {
  double total = 0;
  for (const gdrt::Tensor& loss : losses) total += loss.item();  // CHECK: GD005
  return total / static_cast<double>(losses.size());
}

double pixel_accuracy_fixed(const gdrt::Tensor& mask, const gdrt::Tensor& target) {
  const std::vector<float> m = mask.to_vector<float>(), t = target.to_vector<float>();  // one copy each
  double hits = 0;
  for (std::size_t i = 0; i < m.size(); ++i) hits += m[i] == t[i];
  return hits / static_cast<double>(m.size());
}

double total_loss_fixed(const gdrt::Tensor& losses) { return gdrt::sum(losses).item(); }  // one read, no loop
