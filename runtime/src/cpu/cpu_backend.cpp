// The cpu backend: host memory, synchronous copies, trivial streams/events.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "cpu/cpu_kernels.h"

namespace gdrt {
namespace cpu {
namespace {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return cpu_device(); }
  void* allocate(std::size_t bytes) override {
    // 64-byte alignment keeps SIMD loads and BLAS panels aligned.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      throw Error("GD008", "cpu allocation of " + std::to_string(bytes) + " bytes failed: host memory exhausted");
    return p;
  }
  void deallocate(void* ptr, std::size_t) override { std::free(ptr); }
  void copy(void* dst, MemoryKind, const void* src, MemoryKind, std::size_t bytes, StreamId) override {
    std::memcpy(dst, src, bytes);
  }
  StreamId create_stream() override { return next_id_++; }
  void destroy_stream(StreamId) override {}
  EventId record_event(StreamId) override { return next_id_++; }
  void wait_event(StreamId, EventId) override {}
  void synchronize_event(EventId) override {}
  void synchronize(StreamId) override {}
  void synchronize_device() override {}
  bool host_accessible() const override { return true; }
  Kernels& kernels() override { return kernels_; }

 private:
  CpuKernels kernels_;
  std::uint64_t next_id_ = 1;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

}  // namespace gdrt
