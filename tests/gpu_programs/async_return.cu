// Reproduces GD009 (pageable-async-copy): cudaMemcpyAsync to or from pageable
// memory is not asynchronous. With ~100 ms of kernel work queued on a stream,
// one 256 MiB cudaMemcpyAsync each way, pageable then pinned:
//   pageable HtoD and DtoH return only after the queued work and the copy are
//   done (about 140 ms and 128 ms on an H100);
//   pinned HtoD and DtoH return at once (0.02 ms), the copy still pending.
// "done" or "pending" is what the cudaStreamSynchronize that follows shows:
// done when it returns within 1 ms.
// A correct program copies asynchronously from and to pinned memory
// (cudaMallocHost / cudaHostAlloc / cudaHostRegister), so the host goes on
// working while the copy runs.
//
// Prints one line and exits 0:
//   async_return: pageable HtoD returned after 140.2 ms (done), pinned HtoD after 0.02 ms (pending),
//   pageable DtoH after 128.0 ms (done), pinned DtoH after 0.02 ms (pending)
// None of the buffers is freed.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"

constexpr const char* kProgram = "async_return";

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Outcome {
  double returned_ms;
  bool done;
};

// Queues ~100 ms of work on s, then one cudaMemcpyAsync on s; times its return.
Outcome copy_behind_work(cudaStream_t s, float* d, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  CHECK(cudaDeviceSynchronize());
  spin_read<<<1, 1, 0, s>>>(d, d, 0, 100'000'000);  // ~100 ms
  const auto start = Clock::now();
  CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  const double returned = ms_since(start);
  const auto sync_start = Clock::now();
  CHECK(cudaStreamSynchronize(s));
  return {returned, ms_since(sync_start) < 1.0};
}

const char* state(const Outcome& o) { return o.done ? "done" : "pending"; }

int main() {
  const std::size_t n = std::size_t{64} << 20;  // 256 MiB of floats
  const std::size_t bytes = n * sizeof(float);
  float* d = nullptr;
  float* pinned = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
  std::vector<float> pageable(n, 1.0f);
  for (std::size_t i = 0; i < n; ++i) pinned[i] = 1.0f;
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreate(&s));

  const Outcome pageable_h2d = copy_behind_work(s, d, d, pageable.data(), bytes, cudaMemcpyHostToDevice);
  const Outcome pinned_h2d = copy_behind_work(s, d, d, pinned, bytes, cudaMemcpyHostToDevice);
  const Outcome pageable_d2h = copy_behind_work(s, d, pageable.data(), d, bytes, cudaMemcpyDeviceToHost);
  const Outcome pinned_d2h = copy_behind_work(s, d, pinned, d, bytes, cudaMemcpyDeviceToHost);
  std::printf("async_return: pageable HtoD returned after %.1f ms (%s), pinned HtoD after %.2f ms (%s), "
              "pageable DtoH after %.1f ms (%s), pinned DtoH after %.2f ms (%s)\n",
              pageable_h2d.returned_ms, state(pageable_h2d), pinned_h2d.returned_ms, state(pinned_h2d),
              pageable_d2h.returned_ms, state(pageable_d2h), pinned_d2h.returned_ms, state(pinned_d2h));
  return 0;
}
