#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

// thrust::device_vector elements read or written one at a time from a host loop.

float sum_one_by_one(const thrust::device_vector<float>& values) {
  float total = 0.0f;
  for (size_t i = 0; i < values.size(); ++i) total += values[i];  // CHECK: GD005
  return total;
}

void fill_one_by_one(thrust::device_vector<int>& values) {
  int i = 0;
  while (i < static_cast<int>(values.size())) {
    values[i] = i;  // CHECK: GD005
    ++i;
  }
}

int count_positive(size_t n) {
  thrust::device_vector<double> scores(n, 1.0);
  int positive = 0;
  for (size_t i = 0; i < n; ++i)
    if (scores[i] > 0.0) ++positive;  // CHECK: GD005
  return positive;
}
