#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>

float sum_on_host(const thrust::device_vector<float>& values) {
  thrust::host_vector<float> host = values;
  float total = 0.0f;
  for (size_t i = 0; i < host.size(); ++i) total += host[i];
  return total;
}

float sum_on_device(const thrust::device_vector<float>& values) {
  return thrust::reduce(values.begin(), values.end(), 0.0f);
}

void fill_on_device(thrust::device_vector<int>& values) { thrust::sequence(values.begin(), values.end()); }

// One element, outside any loop, is one transfer.
float first(const thrust::device_vector<float>& values) { return values[0]; }

#define READ_ONCE(v) do { sink = (v)[0]; } while (0)

float once_in_a_macro(const thrust::device_vector<float>& values) {
  float sink = 0.0f;
  READ_ONCE(values);
  return sink;
}

__global__ void scale(float* values, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] *= 2.0f;
}

// &v[0] is the element's address (a device_ptr): no transfer.
void scale_repeatedly(thrust::device_vector<float>& values, int times) {
  for (int t = 0; t < times; ++t) {
    scale<<<1, 256>>>(thrust::raw_pointer_cast(&values[0]), static_cast<int>(values.size()));
    if (cudaGetLastError() != cudaSuccess) return;
  }
}
