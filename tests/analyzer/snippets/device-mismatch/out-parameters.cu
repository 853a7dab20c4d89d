#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Still a bug: the local pointer holds device memory.
unsigned first_entry(const unsigned* host_table) {
  unsigned* table = nullptr;
  CHECK(cudaMalloc((void**)&table, 256 * sizeof(unsigned)));
  CHECK(cudaMemcpy(table, host_table, 256 * sizeof(unsigned), cudaMemcpyHostToDevice));
  const unsigned first = table[0];  // CHECK: GD001
  CHECK(cudaFree(table));
  return first;
}

// Tricky negative (cuda-samples' marchingCubes): the allocation goes to the
// caller through an out-parameter; *table is device memory, table is not.
void allocate_table(unsigned** table, const unsigned* host_table) {
  CHECK(cudaMalloc((void**)table, 256 * sizeof(unsigned)));
  CHECK(cudaMemcpy((void*)*table, (void*)host_table, 256 * sizeof(unsigned), cudaMemcpyHostToDevice));
}
