// A PyTorch training program as a trace records it, for the detectors'
// tests: one Python thread queues work on one CUDA stream, and the GPU runs
// it in order, each op once the one before it is done and its launch has
// come. A read of a scalar (loss.item()) copies it into pinned memory and
// waits for the stream; tensor.cpu() copies into pageable memory, which
// returns only when the copy is done. Times are the host's and the GPU's as
// they would have been; only what the detectors read is recorded.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gpudiag/trace.h"
#include "trace_builder.h"

namespace gpudiag::testing {

// How fast the host queues work against how long the GPU runs it.
struct LoopPace {
  std::uint64_t launch_ns;  // a launch call
  std::uint64_t python_ns;  // Python between two ops
  std::uint64_t kernel_ns;  // an op on the GPU
};
// A UNet at batch 32 on 256x256 images: the GPU sets the pace and the host
// runs ahead.
inline constexpr LoopPace kGpuBound{.launch_ns = 6'000, .python_ns = 14'000, .kernel_ns = 300'000};
// The same UNet at batch 8 on 128x128 images, as on the H100 recordings: 97%
// of the kernels shorter than 50 us, and the host sets the pace.
inline constexpr LoopPace kLaunchBound{.launch_ns = 8'000, .python_ns = 25'000, .kernel_ns = 15'000};

class TorchLoop {
 public:
  static constexpr std::uint32_t kPythonThread = 1;
  static constexpr std::uint64_t kStream = 7;

  // With profiler steps, each step() is a ProfilerStep#N range, as
  // torch.profiler records them; without, the loop is found from the GPU's
  // repeating kernels, as in a trace of the whole run.
  TorchLoop(LoopPace pace, bool profiler_steps) : pace_(pace), profiler_steps_(profiler_steps) {
    t_.devices.push_back({.id = 0, .name = t_.intern("NVIDIA H100 80GB HBM3"), .memory_bytes = 80ull << 30});
  }

  LoopPace pace() const { return pace_; }
  std::uint64_t now() const { return host_; }

  void python(std::uint64_t ns) { host_ += ns; }

  // An op: its launch call, then its kernel when the GPU gets to it.
  void op(const std::string& name, std::uint64_t gpu_ns, const char* launch_call = "cudaLaunchKernel") {
    python(pace_.python_ns);
    const std::uint64_t c = call(launch_call, pace_.launch_ns);
    const std::uint64_t start = std::max(host_, gpu_) + 1'000;
    t_.kernels.push_back({.start_ns = start, .end_ns = start + gpu_ns, .name = t_.intern(name), .device = 0,
                          .stream = kStream, .tid = kPythonThread, .correlation = c});
    gpu_ = start + gpu_ns;
  }
  void op(const std::string& name) { op(name, pace_.kernel_ns); }

  // A batch to the device: from pinned memory with non_blocking=True
  // (asynchronous), or from pageable memory, where the copy holds the host
  // until it is done (staged through the driver's buffer).
  void batch_to_device(std::uint64_t bytes, MemKind from) {
    python(pace_.python_ns);
    const bool pinned = from == MemKind::Pinned;
    const std::uint64_t start = std::max(host_ + 2'000, gpu_), end = start + bytes / 20;  // 20 GB/s
    const std::uint64_t c = call("cudaMemcpyAsync", pinned ? 4'000 : end + 2'000 - host_);
    copy_event(start, end, CopyKind::HtoD, bytes, from, c);
    gpu_ = end;
  }

  // tensor.item(): a copy into pinned memory, then a wait for the stream.
  void item(std::uint64_t bytes = 4) {
    python(pace_.python_ns);
    const std::uint64_t c = call("cudaMemcpyAsync", 4'000);
    const std::uint64_t start = std::max(host_, gpu_) + 1'000;
    copy_event(start, start + 2'000, CopyKind::DtoH, bytes, MemKind::Pinned, c);
    gpu_ = start + 2'000;
    wait_for_gpu("cudaStreamSynchronize", SyncKind::Stream);
  }

  // tensor.cpu() of `bytes`: PyTorch queues the copy into pageable memory
  // and synchronises the stream (memcpy_and_sync).
  void to_cpu(std::uint64_t bytes) {
    python(pace_.python_ns);
    const std::uint64_t c = call("cudaMemcpyAsync", 4'000);
    const std::uint64_t start = std::max(host_, gpu_) + 1'000, end = start + 3'000 + bytes / 20;
    copy_event(start, end, CopyKind::DtoH, bytes, MemKind::Pageable, c);
    gpu_ = end;
    wait_for_gpu("cudaStreamSynchronize", SyncKind::Stream);
  }

  // torch.cuda.synchronize().
  void synchronize() { wait_for_gpu("cudaDeviceSynchronize", SyncKind::Device); }

  // A call that queues no work on the stream, on any thread (the DataLoader's
  // pin-memory thread pinning a batch, the caching host allocator's event
  // queries).
  void call_on_thread(std::uint32_t tid, const char* name, std::uint64_t ns) {
    t_.api_calls.push_back({.start_ns = host_, .end_ns = host_ + ns, .name = t_.intern(name),
                            .domain = ApiDomain::Runtime, .device = 0, .tid = tid, .correlation = next_correlation_++});
  }
  void pinned_alloc(std::uint32_t tid, std::uint64_t addr, std::uint64_t bytes) {
    call_on_thread(tid, "cudaHostAlloc", 200'000);
    t_.allocs.push_back({.time_ns = host_, .addr = addr, .bytes = bytes, .kind = MemKind::Pinned,
                         .device = kHostDevice, .tid = tid});
  }
  // The caching allocator's segments: cudaMalloc'd once and kept.
  void device_segment(std::uint64_t addr, std::uint64_t bytes) {
    call("cudaMalloc", 50'000);
    t_.allocs.push_back({.time_ns = host_, .addr = addr, .bytes = bytes, .kind = MemKind::Device, .device = 0,
                         .tid = kPythonThread});
  }

  // A training step: what `body` queues, inside the profiler's step range
  // where there is one.
  template <class Body>
  void step(Body&& body) {
    const std::uint64_t begin = host_;
    body(*this);
    if (profiler_steps_)
      t_.ranges.push_back({.start_ns = begin, .end_ns = host_,
                           .name = t_.intern("ProfilerStep#" + std::to_string(steps_++)), .tid = kPythonThread});
  }

  Trace finish() {
    t_.sort_by_time();
    return std::move(t_);
  }

 private:
  std::uint64_t call(const char* name, std::uint64_t ns) {
    const std::uint64_t c = next_correlation_++;
    t_.api_calls.push_back({.start_ns = host_, .end_ns = host_ + ns, .name = t_.intern(name),
                            .domain = ApiDomain::Runtime, .device = 0, .tid = kPythonThread, .correlation = c});
    host_ += ns;
    return c;
  }
  void copy_event(std::uint64_t start, std::uint64_t end, CopyKind kind, std::uint64_t bytes, MemKind host_kind,
                  std::uint64_t correlation) {
    Memcpy m = copy(start, end, kind, bytes, true, host_kind);
    m.stream = kStream, m.tid = kPythonThread, m.correlation = correlation;
    t_.memcpys.push_back(m);
  }
  void wait_for_gpu(const char* name, SyncKind kind) {
    const std::uint64_t begin = host_, end = std::max(host_, gpu_) + 3'000;
    const std::uint64_t c = call(name, end - begin);
    t_.syncs.push_back({.start_ns = begin, .end_ns = end, .kind = kind, .device = 0,
                        .stream = kind == SyncKind::Stream ? kStream : 0, .tid = kPythonThread, .correlation = c});
  }

  Trace t_;
  LoopPace pace_;
  bool profiler_steps_;
  std::uint64_t host_ = 1'000'000'000;  // the loop begins a second in, after start-up
  std::uint64_t gpu_ = 0;
  std::uint64_t next_correlation_ = 1;
  int steps_ = 0;
};

}  // namespace gpudiag::testing
