// The caching allocator of cuda_allocator.h and its out-of-memory report.
#include "cuda/cuda_allocator.h"

#include <algorithm>
#include <string>

#include "core/hooks.h"
#include "cuda/cuda_check.h"
#include "gdrt/error.h"

namespace gdrt::cuda {
namespace {

constexpr std::size_t kMinBlock = 512, kSmallLimit = std::size_t{1} << 20, kLargeRound = std::size_t{2} << 20;

std::string bytes_text(std::size_t bytes) {
  const double v = static_cast<double>(bytes);
  char buf[64];
  if (bytes >= (std::size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1 << 30));
  else if (bytes >= (std::size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024);
  else std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  return buf;
}

}  // namespace

CudaAllocator::CudaAllocator(Device device, std::function<cudaStream_t(StreamId)> stream_of)
    : device_(device), stream_of_(std::move(stream_of)) {}

std::size_t CudaAllocator::rounded(std::size_t bytes) {
  if (bytes <= kSmallLimit) return std::max(kMinBlock, (bytes + kMinBlock - 1) / kMinBlock * kMinBlock);
  return (bytes + kLargeRound - 1) / kLargeRound * kLargeRound;
}

std::size_t CudaAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

std::size_t CudaAllocator::live_bytes() const {
  std::lock_guard lock(mutex_);
  return live_bytes_;
}

SharedEvent CudaAllocator::record_on(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  GDRT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  SharedEvent shared(event, [](cudaEvent_t e) { (void)cudaEventDestroy(e); });
  GDRT_CUDA_CHECK(cudaEventRecord(event, stream));
  return shared;
}

bool CudaAllocator::completed(const SharedEvent& event) {
  const cudaError_t status = cudaEventQuery(event.get());
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it so it is not reported later
    return false;
  }
  check(status, "cudaEventQuery");
  return true;
}

void CudaAllocator::process_events() {
  for (std::size_t i = 0; i < pending_.size();) {
    Block& b = pending_[i];
    std::erase_if(b.waits, [](const SharedEvent& e) { return completed(e); });
    if (!b.waits.empty()) {
      ++i;
      continue;
    }
    free_.emplace(std::make_pair(b.stream, b.size), b.ptr);
    pending_[i] = std::move(pending_.back());
    pending_.pop_back();
  }
}

void* CudaAllocator::allocate(std::size_t bytes, StreamId stream) {
  const std::size_t size = rounded(bytes);
  std::lock_guard lock(mutex_);
  if (!pending_.empty()) process_events();
  for (StreamId owner : {stream, kAnyStream}) {
    auto it = free_.find({owner, size});
    if (it == free_.end()) continue;
    void* p = it->second;
    free_.erase(it);
    cached_bytes_ -= size;
    live_bytes_ += size;
    live_.emplace(p, Block{p, size, stream, {}});
    return p;
  }
  void* p = malloc_or_oom(size, bytes);
  live_bytes_ += size;
  live_.emplace(p, Block{p, size, stream, {}});
  return p;
}

void* CudaAllocator::malloc_or_oom(std::size_t size, std::size_t requested) {
  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, size);
  if (status == cudaSuccess) return p;
  if (status != cudaErrorMemoryAllocation) check(status, "cudaMalloc");
  (void)cudaGetLastError();
  // What the cache held can satisfy the request once given back to the driver.
  const std::size_t cached_before = cached_bytes_;
  release_cache_locked();
  status = cudaMalloc(&p, size);
  if (status == cudaSuccess) return p;
  if (status != cudaErrorMemoryAllocation) check(status, "cudaMalloc");
  (void)cudaGetLastError();
  out_of_memory(requested, size, cached_before, status);
}

void CudaAllocator::out_of_memory(std::size_t requested, std::size_t size, std::size_t cached_before,
                                  cudaError_t status) {
  std::size_t free = 0, capacity = 0;
  if (cudaMemGetInfo(&free, &capacity) != cudaSuccess) (void)cudaGetLastError();
  hooks::out_of_memory(device_, requested, free, capacity);
  std::vector<std::size_t> sizes;
  sizes.reserve(live_.size());
  for (const auto& [_, b] : live_) sizes.push_back(b.size);
  const std::size_t shown = std::min<std::size_t>(sizes.size(), 5);
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(shown), sizes.end(),
                    std::greater<>());
  std::string message = device_.str() + " out of memory: tried to allocate " + bytes_text(requested) + " (block of " +
                        bytes_text(size) + ") with " + bytes_text(free) + " free of " + bytes_text(capacity) + " (" +
                        cudaGetErrorName(status) + "). Live tensors hold " + bytes_text(live_bytes_) + " in " +
                        std::to_string(live_.size()) + " blocks";
  if (shown) {
    message += "; the largest:";
    for (std::size_t i = 0; i < shown; ++i) message += (i ? ", " : " ") + bytes_text(sizes[i]);
  }
  message += ". The cache held " + bytes_text(cached_before) +
             ", released before retrying. Free tensors you no longer need (or use a smaller batch)";
  throw Error("GD008", message);
}

void CudaAllocator::deallocate(void* ptr, StreamId stream, const std::vector<StreamId>& used_on) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end())
    throw Error(device_.str() + ": deallocate of a pointer this allocator did not hand out (or freed twice)");
  Block b = std::move(it->second);
  live_.erase(it);
  (void)stream;  // the allocating stream is the one recorded at allocation, as PyTorch's block->stream
  live_bytes_ -= b.size;
  cached_bytes_ += b.size;
  if (auto d = destroyed_.find(b.stream); d != destroyed_.end()) {
    b.waits.push_back(d->second);
    b.stream = kAnyStream;
  }
  for (StreamId s : used_on) {
    if (s == b.stream) continue;
    if (auto d = destroyed_.find(s); d != destroyed_.end()) {
      b.waits.push_back(d->second);
      continue;
    }
    b.waits.push_back(record_on(stream_of_(s)));
  }
  if (b.waits.empty()) free_.emplace(std::make_pair(b.stream, b.size), b.ptr);
  else pending_.push_back(std::move(b));
}

void CudaAllocator::stream_destroyed(StreamId stream, cudaStream_t handle) {
  std::lock_guard lock(mutex_);
  SharedEvent last = record_on(handle);
  destroyed_[stream] = last;
  for (auto it = free_.lower_bound({stream, 0}); it != free_.end() && it->first.first == stream;) {
    pending_.push_back(Block{it->second, it->first.second, kAnyStream, {last}});
    it = free_.erase(it);
  }
  for (Block& b : pending_)
    if (b.stream == stream) {
      b.stream = kAnyStream;
      b.waits.push_back(last);
    }
}

void CudaAllocator::release_cache() {
  std::lock_guard lock(mutex_);
  release_cache_locked();
}

void CudaAllocator::release_cache_locked() {
  for (Block& b : pending_) {
    for (const SharedEvent& e : b.waits) GDRT_CUDA_CHECK(cudaEventSynchronize(e.get()));
    free_.emplace(std::make_pair(b.stream, b.size), b.ptr);
  }
  pending_.clear();
  // A free block may still be in use by work queued on its own stream
  // (that is what makes it reusable there at once): let that work finish.
  if (!free_.empty()) GDRT_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& [key, p] : free_) GDRT_CUDA_CHECK(cudaFree(p));
  free_.clear();
  cached_bytes_ = 0;
  // Pinned blocks too: a failed cudaMalloc may be a host under pressure.
  for (auto& [p, block] : pinned_free_) {
    for (auto& [s, e] : block.uses) GDRT_CUDA_CHECK(cudaEventSynchronize(e.get()));
    GDRT_CUDA_CHECK(cudaFreeHost(p));
  }
  pinned_free_.clear();
}

void* CudaAllocator::allocate_pinned(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  std::lock_guard lock(mutex_);
  // A cached block of the size whose copies are all done (a loader pins the
  // same batch size every step; cudaHostAlloc costs milliseconds).
  for (std::size_t i = 0; i < pinned_free_.size(); ++i) {
    auto& [p, block] = pinned_free_[i];
    if (block.size != size) continue;
    if (!std::all_of(block.uses.begin(), block.uses.end(), [](const auto& u) { return completed(u.second); }))
      continue;
    void* out = p;
    pinned_live_.emplace(reinterpret_cast<std::uintptr_t>(out), PinnedBlock{size, {}});
    pinned_free_[i] = std::move(pinned_free_.back());
    pinned_free_.pop_back();
    return out;
  }
  void* p = nullptr;
  cudaError_t status = cudaHostAlloc(&p, size, cudaHostAllocDefault);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cache_locked();
    status = cudaHostAlloc(&p, size, cudaHostAllocDefault);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw Error("GD008", device_.str() + ": pinned host allocation of " + bytes_text(bytes) +
                             " failed: page-locked host memory exhausted (" + cudaGetErrorString(status) + ")");
  }
  check(status, "cudaHostAlloc");
  pinned_live_.emplace(reinterpret_cast<std::uintptr_t>(p), PinnedBlock{size, {}});
  return p;
}

void CudaAllocator::deallocate_pinned(void* ptr) {
  std::lock_guard lock(mutex_);
  auto it = pinned_live_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == pinned_live_.end())
    throw Error(device_.str() + ": deallocate_pinned of a pointer this allocator did not hand out (or freed twice)");
  pinned_free_.emplace_back(ptr, std::move(it->second));
  pinned_live_.erase(it);
}

void CudaAllocator::pinned_used(const void* ptr, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = pinned_live_.upper_bound(addr);
  if (it == pinned_live_.begin()) return;
  --it;
  if (addr >= it->first + it->second.size) return;  // not ours (another device's pinned block)
  for (auto& [s, e] : it->second.uses)
    if (s == stream) {
      // Stream order: the new record covers the earlier copies on the stream.
      GDRT_CUDA_CHECK(cudaEventRecord(e.get(), stream));
      return;
    }
  it->second.uses.emplace_back(stream, record_on(stream));
}

}  // namespace gdrt::cuda
