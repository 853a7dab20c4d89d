// A file that does not parse: clang's first error is reported, the checks
// still run on what parsed.
#include <cuda_runtime.h>

void fine(int n) {
  float* d = nullptr;
  cudaMalloc(&d, n);  // CHECK: GD006
  cudaFree(d);  // CHECK: GD006
}

void broken() {
  undeclared_function(3);  // CHECK: clang-diagnostic-error
}
