#include "live_allocations.h"

#include <array>
#include <mutex>

namespace gpudiag::cupti {
namespace {

// The last allocations this thread found, newest first: a launch's pointers
// lie in a few allocations (a caching allocator's segments), launch after launch.
struct Hit {
  std::uint64_t start = 0, end = 0;
  MemKind kind = MemKind::Unknown;
};
struct HitCache {
  const LiveAllocations* owner = nullptr;
  std::uint64_t epoch = 0;
  std::array<Hit, 4> hits{};
  std::uint32_t next = 0;
};
thread_local HitCache t_hits;

// Epochs are unique across instances: one made where a destroyed one was
// (tests, the benchmark) never takes over a thread's hits of the old one.
std::atomic<std::uint64_t> g_last_epoch{0};

}  // namespace

std::uint64_t LiveAllocations::next_epoch() { return g_last_epoch.fetch_add(1, std::memory_order_relaxed) + 1; }


void LiveAllocations::erase_overlapping(std::uint64_t start, std::uint64_t end) {
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second.end > start) --it;
  bool erased = false;
  while (it != ranges_.end() && it->first < end) {
    it = ranges_.erase(it);
    erased = true;
  }
  if (erased) epoch_.store(next_epoch(), std::memory_order_release);
}

void LiveAllocations::add(std::uint64_t start, std::uint64_t bytes, MemKind kind) {
  if (bytes == 0 || start + bytes < start) return;
  std::unique_lock lock(mutex_);
  erase_overlapping(start, start + bytes);
  ranges_[start] = {start + bytes, kind};
}

void LiveAllocations::remove(std::uint64_t start, std::uint64_t bytes) {
  std::unique_lock lock(mutex_);
  if (bytes != 0) {
    erase_overlapping(start, start + bytes < start ? UINT64_MAX : start + bytes);
  } else if (ranges_.erase(start) != 0) {
    epoch_.store(next_epoch(), std::memory_order_release);
  }
}

void LiveAllocations::clear() {
  std::unique_lock lock(mutex_);
  ranges_.clear();
  epoch_.store(next_epoch(), std::memory_order_release);
}

std::size_t LiveAllocations::size() const {
  std::shared_lock lock(mutex_);
  return ranges_.size();
}

MemKind LiveAllocations::find(std::uint64_t address) const {
  HitCache& cache = t_hits;
  const std::uint64_t epoch = epoch_.load(std::memory_order_acquire);
  if (cache.owner == this && cache.epoch == epoch) {
    for (const Hit& h : cache.hits)
      if (address >= h.start && address < h.end) return h.kind;
  } else {
    cache = HitCache{.owner = this, .epoch = epoch};
  }
  Hit hit;
  {
    std::shared_lock lock(mutex_);
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return MemKind::Unknown;
    --it;
    if (address >= it->second.end) return MemKind::Unknown;
    hit = {it->first, it->second.end, it->second.kind};
  }
  // Cached under the epoch read before the lookup: a removal since then
  // makes the whole cache stale.
  cache.hits[cache.next++ % cache.hits.size()] = hit;
  return hit.kind;
}

MemKind resolve_memory(const LiveAllocations* live, std::uint64_t value, bool aggregate, PointerQueryFn driver) {
  if (live != nullptr && user_address(value))
    if (const MemKind known = live->find(value); known != MemKind::Unknown) return known;
  return aggregate ? driver_memory_of(value, driver) : memory_of(value, driver);
}

}  // namespace gpudiag::cupti
