#include <cuda_runtime.h>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// A std::vector handed in by reference holds pageable memory all the same.
void upload_parameter(float* device, const std::vector<float>& batch, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, batch.data(), batch.size() * sizeof(float), cudaMemcpyHostToDevice, stream));  // CHECK: GD009
}

void download_into_parameter(const float* device, std::vector<float>& out, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(out.data(), device, out.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));  // CHECK: GD009
  CHECK(cudaStreamSynchronize(stream));
}

class Loader {
 public:
  void upload(float* device, cudaStream_t stream) {
    CHECK(cudaMemcpyAsync(device, staging_.data(), staging_.size() * sizeof(float), cudaMemcpyHostToDevice,  // CHECK: GD009
                          stream));
  }

 private:
  std::vector<float> staging_;
};

// Fixed: a vector whose allocator pins its memory.
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

void upload_pinned_vector(float* device, const std::vector<float, PinnedAllocator<float>>& batch, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(device, batch.data(), batch.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
}

// Fixed: the parameter's memory is registered (pinned) before the copy.
void upload_registered(float* device, std::vector<float>& batch, cudaStream_t stream) {
  CHECK(cudaHostRegister(batch.data(), batch.size() * sizeof(float), cudaHostRegisterDefault));
  CHECK(cudaMemcpyAsync(device, batch.data(), batch.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaHostUnregister(batch.data()));
}

// Tricky negative: a vector of device pointers; its elements are allocations
// of their own, not the vector's memory.
void upload_into_each(const std::vector<float*>& devices, float* pinned, int n, cudaStream_t stream) {
  for (float* device : devices)
    CHECK(cudaMemcpyAsync(device, pinned, n * sizeof(float), cudaMemcpyHostToDevice, stream));
}
