// The cpu backend: host memory, synchronous copies, trivial streams/events.
#include <omp.h>

#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <map>
#include <mutex>
#include <new>

#include "core/hooks.h"
#include "core/registration.h"
#include "cpu/cpu_kernels.h"

namespace gdrt {
namespace cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return cpu_device(); }
  ~CpuBackend() override { release_cache(); }
  // Large blocks are kept in a cache by exact size and reused: a training
  // step allocates the same sizes every iteration, and fresh large blocks
  // would cost page faults on every first touch.
  void* allocate(std::size_t bytes, StreamId) override {
    const std::size_t size = rounded(bytes);
    if (size >= kCacheMin) {
      std::lock_guard lock(mutex_);
      auto it = cache_.find(size);
      if (it != cache_.end()) {
        void* p = it->second;
        cache_.erase(it);
        cached_ -= size;
        return p;
      }
    }
    // 64-byte alignment keeps SIMD loads and BLAS panels aligned.
    void* p = std::aligned_alloc(64, size);
    if (!p) {
      release_cache();
      p = std::aligned_alloc(64, size);
    }
    if (!p)
      throw Error("GD008", "cpu allocation of " + std::to_string(bytes) + " bytes failed: host memory exhausted");
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes, StreamId, const std::vector<StreamId>&) override {
    const std::size_t size = rounded(bytes);
    if (size >= kCacheMin) {
      std::lock_guard lock(mutex_);
      if (cached_ + size <= kCacheMax) {
        cache_.emplace(size, ptr);
        cached_ += size;
        return;
      }
    }
    std::free(ptr);
  }
  // Host memory is already what a device would need pinned memory for.
  void* allocate_pinned(std::size_t bytes) override { return allocate(bytes, 0); }
  void deallocate_pinned(void* ptr, std::size_t bytes) override { deallocate(ptr, bytes, 0, {}); }
  void copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes, StreamId stream,
            std::uint64_t trace_id) override {
    const auto start = trace_id ? hooks::now_ns() : 0;
    std::memcpy(dst, src, bytes);
    if (trace_id) hooks::copy_ran(device(), trace_id, dst, dst_kind, src, src_kind, bytes, start, hooks::now_ns(), stream);
  }
  void launch(const KernelOp& op, StreamId stream, std::uint64_t launch_id) override {
    if (!hooks::recording()) return kernels_.run(op);
    const auto start = hooks::now_ns();
    kernels_.run(op);
    hooks::kernel(device(), kernel_name(op), start, hooks::now_ns(), stream, launch_id);
  }
  StreamId create_stream(StreamFlags) override { return next_id_++; }
  void destroy_stream(StreamId) override {}
  EventId record_event(StreamId) override { return next_id_++; }
  void destroy_event(EventId) override {}
  void wait_event(StreamId, EventId) override {}
  void synchronize_event(EventId) override {}
  void synchronize(StreamId) override {}
  void synchronize_device() override {}
  bool host_accessible() const override { return true; }

 private:
  static constexpr std::size_t kCacheMin = std::size_t{1} << 16, kCacheMax = std::size_t{1} << 30;
  static std::size_t rounded(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64; }
  void release_cache() {
    std::lock_guard lock(mutex_);
    for (auto& [_, p] : cache_) std::free(p);
    cache_.clear();
    cached_ = 0;
  }
  std::mutex mutex_;
  std::multimap<std::size_t, void*> cache_;
  std::size_t cached_ = 0;
  CpuKernels kernels_;
  std::atomic<std::uint64_t> next_id_ = 1;
};

// gdrt::set_num_threads: the pool runs gdrt's own kernels and OpenBLAS its
// GEMMs with n threads each; OpenMP stays at one, since oneDNN runs inside
// the pool's threads (see cpu_conv_dnnl.cpp).
void set_host_threads(int n) {
  omp_set_num_threads(1);
  openblas_set_num_threads(n);
  set_pool_threads(n);
}

}  // namespace
}  // namespace cpu

BackendRegistration cpu_backend_registration() {
  return {DeviceKind::cpu, [](int) -> std::unique_ptr<Backend> { return std::make_unique<cpu::CpuBackend>(); }, {},
          HostThreads{cpu::set_host_threads, cpu::pool_threads}};
}

}  // namespace gdrt
