// Reproduces GD004 (premature-free): stream-ordered memory freed on one stream
// while a kernel on another stream still reads it.
// 10 rounds, two streams A and B, 1M floats (4 MiB) per buffer:
//   src and out allocated with cudaMallocAsync on B, src filled with r on B, B synchronised;
//   a kernel on A spins ~10 ms in each thread, then copies src into out;
//   cudaFreeAsync(src, B): B has nothing pending, so src is free at once in B's order;
//   cudaMallocAsync(junk, B) gets src's address back, and a fill of junk with -1 on B
//   overwrites src while the blocks of A's kernel that have not read yet wait their turn.
// On an H100 junk got src's address in 10 of 10 rounds, and the kernel read
// 237568 wrong values each round (its last wave of blocks, which ran after the fill).
// A correct program orders the free after A's work: record an event on A and
// make B wait for it (cudaStreamWaitEvent) before cudaFreeAsync(src, B), or
// free src on A, or poll cudaStreamQuery(A) until it reports A done.
//
// `--poll a` does the last; `--poll b` polls B instead, which is idle and
// done at once: the free is as early as without polling.
//
// Prints one line and exits 0:
//   freeasync_race: reused 10/10 rounds, wrong in 10/10 rounds, wrong values 237568 per round
// Every buffer is freed at the end of its round; the streams are not destroyed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "check.h"

constexpr const char* kProgram = "freeasync_race";

// Polls a stream until cudaStreamQuery reports its work done.
void poll_until_done(cudaStream_t s) {
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
  }
  CHECK(e);
}

int main(int argc, char** argv) {
  const std::string poll = argc == 3 && std::string(argv[1]) == "--poll" ? argv[2] : "";
  if (argc != 1 && poll != "a" && poll != "b") {
    std::fprintf(stderr, "usage: %s [--poll a|b]\n", argv[0]);
    return 2;
  }
  const int n = 1 << 20;
  const std::size_t bytes = n * sizeof(float);
  const int rounds = 10;
  const long long spin_ns = 10'000'000;  // ~10 ms
  cudaStream_t a = nullptr;
  cudaStream_t b = nullptr;
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  std::vector<float> host(n);

  int reused = 0;
  int wrong_rounds = 0;
  long long wrong_total = 0;
  for (int r = 1; r <= rounds; ++r) {
    float* src = nullptr;
    float* out = nullptr;
    float* junk = nullptr;
    CHECK(cudaMallocAsync(&src, bytes, b));
    CHECK(cudaMallocAsync(&out, bytes, b));
    fill<<<(n + 255) / 256, 256, 0, b>>>(src, n, static_cast<float>(r));
    CHECK(cudaStreamSynchronize(b));

    spin_read<<<(n + 255) / 256, 256, 0, a>>>(src, out, n, spin_ns);
    if (!poll.empty()) poll_until_done(poll == "a" ? a : b);
    CHECK(cudaFreeAsync(src, b));  // the mistake, unless A was polled: A's kernel has not read src yet
    CHECK(cudaMallocAsync(&junk, bytes, b));
    fill<<<(n + 255) / 256, 256, 0, b>>>(junk, n, -1.0f);
    CHECK(cudaDeviceSynchronize());

    CHECK(cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += host[i] != static_cast<float>(r);
    reused += junk == src;
    wrong_rounds += wrong > 0;
    wrong_total += wrong;
    CHECK(cudaFreeAsync(junk, b));
    CHECK(cudaFreeAsync(out, b));
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("freeasync_race: reused %d/%d rounds, wrong in %d/%d rounds, wrong values %lld per round\n", reused,
              rounds, wrong_rounds, rounds, wrong_total / rounds);
  return 0;
}
