// Reproduces GD003 (unsynced-transfer) and GD009 (pageable-async-copy).
// 20 rounds: a kernel fills a 1M-float device buffer with the round number r,
// cudaMemcpyAsync copies it device-to-host into pinned memory, and the host
// reads the copy before cudaDeviceSynchronize. The copy is still in flight,
// so the host sees the previous round's values (stale). Then 20 rounds of the
// same into a pageable std::vector: that "asynchronous" copy returns only once
// it is done, so the read is never stale, and the copy is not asynchronous.
// The read looks at the last element, the one the copy writes last.
// A correct program synchronises the copy's stream (cudaStreamSynchronize,
// or an event) before reading, and copies asynchronously only to pinned memory.
//
// Prints one line and exits 0:
//   unsynced_read: pinned stale 20/20, pageable stale 0/20
// Neither buffer is freed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"

constexpr const char* kProgram = "unsynced_read";

int main() {
  const int n = 1 << 20;
  const std::size_t bytes = n * sizeof(float);
  const int rounds = 20;
  float* d = nullptr;
  float* pinned = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
  std::vector<float> pageable(n);

  int pinned_stale = 0;
  for (int r = 1; r <= rounds; ++r) {
    fill<<<(n + 255) / 256, 256>>>(d, n, static_cast<float>(r));
    CHECK(cudaMemcpyAsync(pinned, d, bytes, cudaMemcpyDeviceToHost, 0));
    pinned_stale += static_cast<volatile float*>(pinned)[n - 1] != static_cast<float>(r);  // the mistake: read before the sync
    CHECK(cudaDeviceSynchronize());
  }
  int pageable_stale = 0;
  for (int r = 1; r <= rounds; ++r) {
    fill<<<(n + 255) / 256, 256>>>(d, n, static_cast<float>(r));
    CHECK(cudaMemcpyAsync(pageable.data(), d, bytes, cudaMemcpyDeviceToHost, 0));  // pageable: returns when done
    pageable_stale += static_cast<volatile float*>(pageable.data())[n - 1] != static_cast<float>(r);
    CHECK(cudaDeviceSynchronize());
  }
  std::printf("unsynced_read: pinned stale %d/%d, pageable stale %d/%d\n", pinned_stale, rounds, pageable_stale, rounds);
  return 0;
}
