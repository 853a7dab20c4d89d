// The cuda backend's caching allocator, with PyTorch's stream rules: device
// blocks are cached per (stream, rounded size) and a freed block serves its
// own stream's next allocation at once (stream order makes that safe), while
// streams that also used it (record_stream) get an event each and the block
// waits until all of them completed. cudaMalloc and cudaFree synchronise, so
// a training loop that allocates the same sizes every step must not reach them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "gdrt/backend.h"

namespace gdrt::cuda {

using SharedEvent = std::shared_ptr<CUevent_st>;

class CudaAllocator {
 public:
  // `stream_of` maps a StreamId to its cudaStream_t (throws for an unknown id).
  CudaAllocator(Device device, std::function<cudaStream_t(StreamId)> stream_of);
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  void* allocate(std::size_t bytes, StreamId stream);
  void deallocate(void* ptr, StreamId stream, const std::vector<StreamId>& used_on);
  // Called before `stream` is destroyed: its cached blocks, and blocks still
  // live on it, become usable by any stream once its queued work is done.
  void stream_destroyed(StreamId stream, cudaStream_t handle);
  // Frees every cached block, waiting for the events they wait on.
  void release_cache();

  void* allocate_pinned(std::size_t bytes);
  void deallocate_pinned(void* ptr);
  // An asynchronous copy on `stream` reads or writes pinned memory at `ptr`:
  // the pinned block is not reused or freed before the copy is done.
  void pinned_used(const void* ptr, cudaStream_t stream);

  // The size a request is served with: 512-byte multiples up to 1 MiB,
  // 2 MiB multiples beyond (PyTorch's small and large pools).
  static std::size_t rounded(std::size_t bytes);
  std::size_t cached_bytes() const;
  std::size_t live_bytes() const;

 private:
  // Blocks handed out or cached for a stream that no longer exists.
  static constexpr StreamId kAnyStream = ~StreamId{0};
  struct Block {
    void* ptr = nullptr;
    std::size_t size = 0;
    StreamId stream = 0;
    std::vector<SharedEvent> waits;  // the block is free once all completed
  };
  struct PinnedBlock {
    std::size_t size = 0;
    std::vector<std::pair<cudaStream_t, SharedEvent>> uses;  // last copy per stream
  };

  SharedEvent record_on(cudaStream_t stream);
  // Moves pending blocks whose events all completed into the free pools.
  void process_events();
  void release_cache_locked();
  void* malloc_or_oom(std::size_t size, std::size_t requested);
  [[noreturn]] void out_of_memory(std::size_t requested, std::size_t size, std::size_t cached_before,
                                  cudaError_t status);
  static bool completed(const SharedEvent& event);

  Device device_;
  std::function<cudaStream_t(StreamId)> stream_of_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::multimap<std::pair<StreamId, std::size_t>, void*> free_;
  std::vector<Block> pending_;
  std::map<StreamId, SharedEvent> destroyed_;  // each destroyed stream's last event
  std::size_t live_bytes_ = 0, cached_bytes_ = 0;

  std::map<std::uintptr_t, PinnedBlock> pinned_live_;
  std::vector<std::pair<void*, PinnedBlock>> pinned_free_;
};

}  // namespace gdrt::cuda
