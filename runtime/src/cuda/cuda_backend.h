// The cuda backend: gdrt's Backend (gdrt/backend.h) on one CUDA device, with
// the caching allocator, CUDA streams and events, cuBLAS, cuDNN and the
// backend's own kernels. The factory refuses a machine without a usable
// device, which is how preferred_device() falls back to the cpu.
#pragma once

#include <memory>

#include "cuda/cuda_allocator.h"
#include "cuda/cuda_blas.h"
#include "cuda/cuda_dnn.h"
#include "cuda/cuda_streams.h"
#include "cuda/cuda_timing.h"

namespace gdrt::cuda {

class CudaBackend final : public Backend {
 public:
  // Throws gdrt::Error when the CUDA runtime finds no device (no driver, no
  // GPU) or `index` is out of range.
  explicit CudaBackend(int index);
  ~CudaBackend() override;

  Device device() const override { return Device{DeviceKind::cuda, index_}; }
  bool functional() const override { return true; }  // the constructor found the device

  void* allocate(std::size_t bytes, StreamId stream) override;
  void deallocate(void* ptr, std::size_t bytes, StreamId stream, const std::vector<StreamId>& used_on) override;
  void* allocate_pinned(std::size_t bytes) override;
  void deallocate_pinned(void* ptr, std::size_t bytes) override;
  void copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes,
            StreamId stream, std::uint64_t trace_id) override;
  void launch(const KernelOp& op, StreamId stream, std::uint64_t launch_id) override;
  StreamId create_stream(StreamFlags flags) override;
  void destroy_stream(StreamId stream) override;
  EventId record_event(StreamId stream) override;
  void destroy_event(EventId event) override;
  void wait_event(StreamId stream, EventId event) override;
  void synchronize_event(EventId event) override;
  void synchronize(StreamId stream) override;
  void synchronize_device() override;
  bool host_accessible() const override { return false; }

  // For tests and diagnostics.
  CudaAllocator& allocator() { return *allocator_; }
  cudaStream_t stream_handle(StreamId stream) const { return streams_.get(stream); }

 private:
  void run(const KernelOp& op, StreamId id, cudaStream_t stream);

  int index_;
  int sm_count_ = 1;
  int cc_major_ = 0;
  StreamTable streams_;
  std::unique_ptr<CudaAllocator> allocator_;
  std::unique_ptr<KernelTimer> timer_;
  // Library handles, made on first use: a process that never multiplies or
  // convolves does not pay for loading cuBLAS's or cuDNN's kernels.
  std::mutex libraries_mutex_;
  std::unique_ptr<Blas> blas_;
  std::unique_ptr<Convolutions> convolutions_;
  Blas& blas();
  Convolutions& convolutions();
};

}  // namespace gdrt::cuda
