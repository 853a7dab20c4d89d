// Kernel execution times for the tracing hooks. A launch is bracketed by two
// timing events; once both have completed (seen at the next launch or host
// synchronisation) their times are mapped onto the host clock through an
// anchor event whose host time was taken when it completed on an idle
// stream, and hooks::kernel gets the interval the kernel ran, not the time
// its launch was queued.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "gdrt/backend.h"

namespace gdrt::cuda {

class KernelTimer {
 public:
  explicit KernelTimer(Device device);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  // An event and the host time it completed at; every start is later than
  // its anchor, so elapsed times from it are positive.
  struct Anchor {
    cudaEvent_t event = nullptr;
    std::uint64_t host_ns = 0;
    ~Anchor();
  };
  // One launch's start, taken before it is queued.
  struct Started {
    cudaEvent_t start;
    std::shared_ptr<Anchor> anchor;
  };
  // Around one launch on `stream`, while hooks::recording(device()); abandon() when
  // the launch threw instead.
  Started begin(cudaStream_t stream);
  void end(Started started, cudaStream_t stream, const char* name, StreamId id, std::uint64_t launch_id);
  void abandon(Started started);
  // Reports every bracketed kernel that has completed, in launch order up to
  // the first still running.
  void flush();

 private:
  struct Pending {
    cudaEvent_t start, stop;
    std::shared_ptr<Anchor> anchor;
    const char* name;
    StreamId stream;
    std::uint64_t launch_id;
  };
  std::shared_ptr<Anchor> anchor_locked();
  cudaEvent_t take_event_locked();
  void flush_locked();

  Device device_;
  std::mutex mutex_;
  cudaStream_t idle_ = nullptr;  // only anchors are recorded on it
  std::shared_ptr<Anchor> anchor_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> spare_;
};

}  // namespace gdrt::cuda
