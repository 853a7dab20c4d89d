// Uses the installed runtime and recording API the way a user would.
#include <gdrt/gdrt.h>
#include <gpudiag/record.h>

#include <cstdio>

int main() {
  gdrt::Tensor a = gdrt::ones({2, 3});
  gdrt::Tensor b = gdrt::full({2, 3}, 2.0);
  double total = gdrt::sum(a * b).item();
  std::printf("sum=%g tracing=%d\n", total, gpudiag::rec::enabled() ? 1 : 0);
  return total == 12.0 ? 0 : 1;
}
