// The allocations the program holds now, as the injection library saw them
// made and freed: what a kernel's pointer argument points into, answered
// without asking the driver (a cuPointerGetAttributes per pointer word of
// every launch otherwise). Only what was seen is known: an address it does
// not hold (IPC memory, memory freed since, mapped or pool memory whose
// kind only the driver knows, a number) is the driver's to answer, so a miss
// costs time, never a different answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <shared_mutex>

#include "gpudiag/event_types.h"
#include "kernel_args.h"

namespace gpudiag::cupti {

class LiveAllocations {
 public:
  // An allocation made (Device, Pinned or Managed memory). One that overlaps
  // a range still held replaces it: that range's free was not seen.
  void add(std::uint64_t start, std::uint64_t bytes, MemKind kind);
  // Freed: `bytes` 0 is the allocation that starts at `start` (cudaFree
  // names only the address); else every allocation overlapping the range
  // (cuMemUnmap names the range).
  void remove(std::uint64_t start, std::uint64_t bytes);
  // Everything goes (a context destroyed, a device reset).
  void clear();
  // The kind of the allocation holding `address`, or Unknown. Lock-free when
  // the address lies in one of the last few allocations this thread found
  // and nothing was freed since.
  MemKind find(std::uint64_t address) const;
  std::size_t size() const;

 private:
  struct Range {
    std::uint64_t end;
    MemKind kind;
  };
  void erase_overlapping(std::uint64_t start, std::uint64_t end);  // holds mutex_ exclusively
  static std::uint64_t next_epoch();

  mutable std::shared_mutex mutex_;
  std::map<std::uint64_t, Range> ranges_;  // by start; disjoint
  // A new value on every removal: a thread's cached hits from before are
  // stale. Adding needs none: a new range overlaps no live one (overlaps are
  // removed first).
  std::atomic<std::uint64_t> epoch_{next_epoch()};
};

// What a kernel's argument word points into: `live` first, the driver only
// when `live` does not hold it; the same answer driver_memory_of (aggregate
// words) or memory_of would give.
MemKind resolve_memory(const LiveAllocations* live, std::uint64_t value, bool aggregate, PointerQueryFn driver);

}  // namespace gpudiag::cupti
