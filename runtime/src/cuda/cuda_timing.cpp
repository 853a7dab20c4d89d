// Kernel timing for the trace (cuda_timing.h).
#include "cuda/cuda_timing.h"

#include "core/hooks.h"
#include "cuda/cuda_check.h"

namespace gdrt::cuda {
namespace {

// Float milliseconds from cudaEventElapsedTime lose sub-microsecond
// resolution after a few seconds; anchors are renewed well before.
constexpr std::uint64_t kAnchorLifetimeNs = 1'000'000'000;
// Bounds the events held when the host never synchronises.
constexpr std::size_t kMaxPending = 1 << 14;

bool done(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  check(status, "cudaEventQuery");
  return true;
}

}  // namespace

KernelTimer::Anchor::~Anchor() {
  if (event) (void)cudaEventDestroy(event);
}

KernelTimer::KernelTimer(Device device) : device_(device) {}

KernelTimer::~KernelTimer() {
  for (auto& p : pending_) {
    (void)cudaEventDestroy(p.start);
    (void)cudaEventDestroy(p.stop);
  }
  for (cudaEvent_t e : spare_) (void)cudaEventDestroy(e);
  anchor_.reset();
  if (idle_) (void)cudaStreamDestroy(idle_);
}

std::shared_ptr<KernelTimer::Anchor> KernelTimer::anchor_locked() {
  const std::uint64_t now = hooks::now_ns();
  if (anchor_ && now - anchor_->host_ns < kAnchorLifetimeNs) return anchor_;
  if (!idle_) GDRT_CUDA_CHECK(cudaStreamCreateWithFlags(&idle_, cudaStreamNonBlocking));
  auto anchor = std::make_shared<Anchor>();
  GDRT_CUDA_CHECK(cudaEventCreateWithFlags(&anchor->event, cudaEventDefault));
  // The idle stream has no work, so the event completes as soon as the GPU
  // sees it: between the two host readings.
  const std::uint64_t before = hooks::now_ns();
  GDRT_CUDA_CHECK(cudaEventRecord(anchor->event, idle_));
  GDRT_CUDA_CHECK(cudaEventSynchronize(anchor->event));
  const std::uint64_t after = hooks::now_ns();
  anchor->host_ns = before + (after - before) / 2;
  anchor_ = anchor;
  return anchor_;
}

cudaEvent_t KernelTimer::take_event_locked() {
  if (!spare_.empty()) {
    cudaEvent_t e = spare_.back();
    spare_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  GDRT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  return e;
}

KernelTimer::Started KernelTimer::begin(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  Started started{take_event_locked(), anchor_locked()};
  GDRT_CUDA_CHECK(cudaEventRecord(started.start, stream));
  return started;
}

void KernelTimer::abandon(Started started) {
  std::lock_guard lock(mutex_);
  spare_.push_back(started.start);
}

void KernelTimer::end(Started started, cudaStream_t stream, const char* name, StreamId id,
                      std::uint64_t launch_id) {
  std::lock_guard lock(mutex_);
  cudaEvent_t stop = take_event_locked();
  GDRT_CUDA_CHECK(cudaEventRecord(stop, stream));
  pending_.push_back(Pending{started.start, stop, std::move(started.anchor), name, id, launch_id});
  if (pending_.size() > kMaxPending) GDRT_CUDA_CHECK(cudaEventSynchronize(pending_.front().stop));
  flush_locked();
}

void KernelTimer::flush() {
  std::lock_guard lock(mutex_);
  flush_locked();
}

void KernelTimer::flush_locked() {
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (!done(p.stop)) return;
    float start_ms = 0, stop_ms = 0;
    GDRT_CUDA_CHECK(cudaEventElapsedTime(&start_ms, p.anchor->event, p.start));
    GDRT_CUDA_CHECK(cudaEventElapsedTime(&stop_ms, p.anchor->event, p.stop));
    const auto at = [&](float ms) {
      const double ns = static_cast<double>(p.anchor->host_ns) + static_cast<double>(ms) * 1e6;
      return ns > 0 ? static_cast<std::uint64_t>(ns) : std::uint64_t{0};
    };
    hooks::kernel(device_, p.name, at(start_ms), at(stop_ms), p.stream, p.launch_id);
    spare_.push_back(p.start);
    spare_.push_back(p.stop);
    pending_.pop_front();
  }
}

}  // namespace gdrt::cuda
