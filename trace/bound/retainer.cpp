#include "retainer.h"

#include <unordered_map>

#include "gpudiag/event_types.h"

namespace gpudiag::gdtrace {
namespace {

constexpr std::int32_t kCudaNotReady = 600;  // a query that found work still running: not a failure

bool failed(const RawEvent& e) {
  const auto status = static_cast<std::int32_t>(e.p[0]);
  return status != 0 && status != kCudaNotReady;
}

// An allocation is known by its address on its device.
Retainer::Key allocation_key(const RawEvent& e) {
  return {0, 0, 0, 0, e.device, 0, 0, e.p[0]};
}

}  // namespace

std::size_t Retainer::KeyHash::operator()(const Key& k) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  mix(std::uint64_t{k.kind} | std::uint64_t{k.a} << 8 | std::uint64_t{k.b} << 16 | std::uint64_t{k.c} << 24 |
      std::uint64_t{static_cast<std::uint32_t>(k.device)} << 32);
  mix(std::uint64_t{k.stack} | std::uint64_t{k.x} << 32);
  mix(k.extra);
  return static_cast<std::size_t>(h);
}

// What makes two events "the same thing at the same place": the kernel's
// name, a copy's direction and memory kinds, an argument's position and
// what it points into, a call's name; never times or addresses.
bool Retainer::first_occurrence(const RawEvent& e) {
  if (seen_.size() >= kMaxFirstOccurrences) return false;
  Key k{e.kind, e.a, e.b, e.c, e.device, e.stack, e.x, 0};
  switch (static_cast<EventKind>(e.kind)) {
    case EventKind::Memcpy:
    case EventKind::Memset:
      k.extra = e.flags & kFlagAsync;
      break;
    case EventKind::Api:
      k.extra = e.p[1];  // the kernel a launch launched
      break;
    default:
      break;
  }
  return seen_.insert(k).second;
}

bool Retainer::error_worth_keeping(const RawEvent& e) {
  const Key k{e.kind, e.a, 0, 0, e.device, e.stack, e.x, e.p[0]};
  return ++errors_[k] <= kErrorsPerSite;
}

std::vector<RawEvent> Retainer::keep_from(std::span<const RawEvent> events) {
  std::vector<bool> keep(events.size(), false);
  // Allocations of this segment not yet freed in it, by address: kept at its
  // end, or at an out-of-memory, where the report needs who held the memory.
  std::unordered_map<Key, std::size_t, KeyHash> live;
  std::unordered_set<std::uint32_t> after_error;  // threads whose next call may check an error
  const auto keep_live = [&] {
    for (const auto& [key, i] : live) {
      keep[i] = true;
      kept_allocations_.insert(key);
    }
    live.clear();
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    const RawEvent& e = events[i];
    switch (static_cast<EventKind>(e.kind)) {
      case EventKind::Alloc: {
        // Allocated again with no free seen here: that free reached another
        // file (threads' buffers are written out of order), so the earlier
        // allocation is kept too, or its free would look like a double free.
        auto [it, fresh] = live.try_emplace(allocation_key(e), i);
        if (!fresh) {
          keep[it->second] = true;
          it->second = i;
        }
        break;
      }
      case EventKind::Free: {
        const Key key = allocation_key(e);
        if (live.erase(key) != 0) break;  // allocated and freed in what is dropped
        // The free of an allocation kept earlier, or of one the trace never
        // saw allocated: dropping it would make the allocation look leaked,
        // or the free look like a stray.
        kept_allocations_.erase(key);
        keep[i] = true;
        break;
      }
      case EventKind::OutOfMemory:
        keep[i] = error_worth_keeping(e);
        keep_live();
        break;
      case EventKind::Finding:
        keep[i] = error_worth_keeping(e);
        break;
      case EventKind::Device:
      case EventKind::Stream:
        keep[i] = true;
        break;
      case EventKind::Api: {
        // A failure is its own site, apart from the same call succeeding.
        const bool fails = failed(e);
        keep[i] = after_error.erase(e.tid) != 0;
        if (fails && error_worth_keeping(e)) {
          keep[i] = true;
          after_error.insert(e.tid);
        } else if (!fails && first_occurrence(e)) {
          keep[i] = true;
        }
        break;
      }
      case EventKind::MemoryCounter:
        break;  // a sample of a curve: the newest samples say the same
      default:
        keep[i] = first_occurrence(e);
        break;
    }
  }
  keep_live();
  std::vector<RawEvent> kept;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (keep[i]) kept.push_back(events[i]);
  return kept;
}

}  // namespace gpudiag::gdtrace
