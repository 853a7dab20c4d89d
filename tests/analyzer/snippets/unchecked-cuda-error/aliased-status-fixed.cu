// Fixed: each status that comes through the alias is checked.
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

struct DeviceSort {
  template <typename Key>
  static std::enable_if_t<std::is_arithmetic_v<Key>, cudaError_t> sort_keys(void* temp, std::size_t& temp_bytes,
                                                                            const Key* in, Key* out, int n);
};

cudaError_t sort(const float* d_in, float* d_out, int n) {
  std::size_t temp_bytes = 0;
  cudaError_t status = DeviceSort::sort_keys<float>(nullptr, temp_bytes, d_in, d_out, n);
  if (status != cudaSuccess) return status;
  void* temp = nullptr;
  if ((status = cudaMalloc(&temp, temp_bytes)) != cudaSuccess) return status;
  status = DeviceSort::sort_keys<float>(temp, temp_bytes, d_in, d_out, n);
  const cudaError_t freed = cudaFree(temp);
  return status != cudaSuccess ? status : freed;
}
