// The fixed twin of members-bug.cu: the members hold pinned memory, from
// cudaMallocHost or a pinned allocator, or the copy is synchronous.
#include <cuda_runtime.h>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

template <typename T>
struct PinnedAllocator {
  using value_type = T;
  PinnedAllocator() = default;
  template <typename U>
  PinnedAllocator(const PinnedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    void* p = nullptr;
    if (cudaMallocHost(&p, n * sizeof(T)) != cudaSuccess) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { (void)cudaFreeHost(p); }
};
template <typename T, typename U>
bool operator==(const PinnedAllocator<T>&, const PinnedAllocator<U>&) { return true; }

class Prefetcher {
 public:
  explicit Prefetcher(size_t n) : n_(n), host_(n) {
    CHECK(cudaMallocHost(reinterpret_cast<void**>(&scratch_), n * sizeof(float)));
  }
  ~Prefetcher() {
    (void)cudaFreeHost(scratch_);
    free(labels_);
  }
  void push(float* device, cudaStream_t stream) {
    CHECK(cudaMemcpyAsync(device, this->host_.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(device, scratch_, n_ * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpy(device, labels_, 64 * sizeof(int), cudaMemcpyHostToDevice));
  }

 private:
  size_t n_;
  std::vector<float, PinnedAllocator<float>> host_;
  float* scratch_ = nullptr;
  int* labels_ = static_cast<int*>(malloc(64 * sizeof(int)));
};

struct Batch {
  std::vector<float, PinnedAllocator<float>> tokens;
};

void push_batch(float* device, const Batch& batch, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, batch.tokens.data(), batch.tokens.size() * sizeof(float), cudaMemcpyHostToDevice,
                        stream));
}
