// Bug: a library call whose status comes through an alias, as CUB's device
// algorithms return `::cuda::std::enable_if_t<..., cudaError_t>`: the size
// query and the sort drop a failure (an invalid argument, a launch that did
// not fit) that only the results would show.
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

struct DeviceSort {
  template <typename Key>
  static std::enable_if_t<std::is_arithmetic_v<Key>, cudaError_t> sort_keys(void* temp, std::size_t& temp_bytes,
                                                                            const Key* in, Key* out, int n);
};

void sort(const float* d_in, float* d_out, int n) {
  std::size_t temp_bytes = 0;
  DeviceSort::sort_keys<float>(nullptr, temp_bytes, d_in, d_out, n);  // CHECK: GD006
  void* temp = nullptr;
  if (cudaMalloc(&temp, temp_bytes) != cudaSuccess) return;
  DeviceSort::sort_keys<float>(temp, temp_bytes, d_in, d_out, n);  // CHECK: GD006
  if (cudaFree(temp) != cudaSuccess) return;
}
