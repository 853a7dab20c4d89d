// StreamIds and EventIds of the cuda backend as CUDA handles. StreamId 0 is
// the legacy default stream, which synchronises with blocking streams as
// gdrt's stream model (gdrt/backend.h) says; created streams are blocking or
// non-blocking as asked. Several threads may create and use streams at once.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "gdrt/backend.h"

namespace gdrt::cuda {

class StreamTable {
 public:
  ~StreamTable();
  StreamId create(StreamFlags flags);
  // Removes the stream and returns its handle for the caller to destroy
  // (after the allocator has taken its last event).
  cudaStream_t remove(StreamId stream);
  // Throws gdrt::Error for an id this table never made (or removed).
  cudaStream_t get(StreamId stream) const;

  EventId record(StreamId stream);
  cudaEvent_t event(EventId event) const;
  // Removes the event and returns its handle for the caller to destroy.
  cudaEvent_t remove_event(EventId event);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<StreamId, cudaStream_t> streams_;
  std::unordered_map<EventId, cudaEvent_t> events_;
  std::atomic<std::uint64_t> next_id_ = 1;
};

}  // namespace gdrt::cuda
