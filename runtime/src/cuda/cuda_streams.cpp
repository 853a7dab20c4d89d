// The stream and event tables of cuda_streams.h.
#include "cuda/cuda_streams.h"

#include <string>

#include "cuda/cuda_check.h"
#include "gdrt/error.h"

namespace gdrt::cuda {

StreamTable::~StreamTable() {
  // Only reached when a backend is torn down explicitly (the registry keeps
  // backends for the process's life); the driver may already be gone at exit.
  for (auto& [_, s] : streams_) (void)cudaStreamDestroy(s);
  for (auto& [_, e] : events_) (void)cudaEventDestroy(e);
}

StreamId StreamTable::create(StreamFlags flags) {
  cudaStream_t s = nullptr;
  GDRT_CUDA_CHECK(cudaStreamCreateWithFlags(
      &s, flags == StreamFlags::non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
  const StreamId id = next_id_++;
  std::lock_guard lock(mutex_);
  streams_.emplace(id, s);
  return id;
}

cudaStream_t StreamTable::remove(StreamId stream) {
  if (stream == 0) throw Error("the default stream cannot be destroyed");
  std::lock_guard lock(mutex_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) throw Error("destroy of unknown cuda stream " + std::to_string(stream));
  cudaStream_t s = it->second;
  streams_.erase(it);
  return s;
}

cudaStream_t StreamTable::get(StreamId stream) const {
  if (stream == 0) return cudaStreamLegacy;
  std::lock_guard lock(mutex_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) throw Error("unknown cuda stream " + std::to_string(stream) + " (destroyed, or another device's)");
  return it->second;
}

EventId StreamTable::record(StreamId stream) {
  const cudaStream_t s = get(stream);
  cudaEvent_t e = nullptr;
  GDRT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const cudaError_t status = cudaEventRecord(e, s);
  if (status != cudaSuccess) {
    (void)cudaEventDestroy(e);
    check(status, "cudaEventRecord");
  }
  const EventId id = next_id_++;
  std::lock_guard lock(mutex_);
  events_.emplace(id, e);
  return id;
}

cudaEvent_t StreamTable::event(EventId event) const {
  std::lock_guard lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) throw Error("unknown cuda event " + std::to_string(event));
  return it->second;
}

cudaEvent_t StreamTable::remove_event(EventId event) {
  std::lock_guard lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) throw Error("unknown cuda event " + std::to_string(event));
  const cudaEvent_t e = it->second;
  events_.erase(it);
  return e;
}

}  // namespace gdrt::cuda
