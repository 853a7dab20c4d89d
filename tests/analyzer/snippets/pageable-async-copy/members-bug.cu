// Host buffers kept in class members: the member's type (std::vector,
// std::array) or the malloc that fills it proves the memory pageable, so the
// async copies are staged and do not overlap.
#include <cuda_runtime.h>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

class Prefetcher {
 public:
  explicit Prefetcher(size_t n) : n_(n), host_(n) { scratch_ = static_cast<float*>(malloc(n * sizeof(float))); }
  ~Prefetcher() {
    free(scratch_);
    free(labels_);
  }
  void push(float* device, cudaStream_t stream) {
    CHECK(cudaMemcpyAsync(device, this->host_.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
    CHECK(cudaMemcpyAsync(device, scratch_, n_ * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
    CHECK(cudaMemcpyAsync(device, labels_, 64 * sizeof(int), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
    CHECK(cudaMemcpyAsync(device, stats_.data(), sizeof(stats_), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
  }

 private:
  size_t n_;
  std::vector<float> host_;
  float* scratch_;
  int* labels_ = static_cast<int*>(malloc(64 * sizeof(int)));
  std::array<float, 4> stats_{};
};

// Another object's member: its type says where its elements are.
struct Batch {
  std::vector<float> tokens;
};

void push_batch(float* device, const Batch& batch, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, batch.tokens.data(), batch.tokens.size() * sizeof(float), cudaMemcpyHostToDevice,  // CHECK: GD009
                        stream));
}
