// Memory timeline: every allocation of a Trace with its lifetime, live bytes
// over time per device, the peak and what was live at it, leaks at exit.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "gpudiag/trace.h"

namespace gpudiag {

inline constexpr std::uint64_t kStillLive = std::numeric_limits<std::uint64_t>::max();

// One allocation and when it ended (kStillLive: never freed in the trace).
struct Block {
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
  std::uint64_t alloc_ns = 0;
  std::uint64_t free_ns = kStillLive;
  std::uint64_t free_stream = 0;
  StackId stack = kNoStack;       // the allocating stack
  StackId free_stack = kNoStack;  // the freeing stack
  MemKind kind = MemKind::Unknown;
  std::uint64_t stream = 0;
  std::uint32_t alloc_index = 0;  // index into Trace::allocs
  bool live_at(std::uint64_t t) const { return alloc_ns <= t && t < free_ns; }
};

// Live bytes right after an allocation or free.
struct LivePoint {
  std::uint64_t time_ns = 0;
  std::uint64_t live_bytes = 0;
};

struct DeviceMemory {
  std::int32_t device = kHostDevice;
  std::vector<Block> blocks;      // in allocation order
  std::vector<LivePoint> live;    // step function of live bytes
  std::uint64_t peak_bytes = 0;
  std::uint64_t peak_ns = 0;
  std::vector<std::uint32_t> live_at_peak;  // indices into blocks
  std::vector<std::uint32_t> leaked;        // blocks live at the end of the trace
  // Allocator totals sampled by the source (Kineto, nsys), in time order.
  std::vector<MemoryCounter> counters;
  std::uint64_t peak_allocated_counter = 0;
  std::uint64_t peak_reserved = 0;
  std::uint64_t capacity_bytes = 0;         // 0 unknown
  std::uint64_t unmatched_frees = 0;        // frees of memory allocated before the trace began
  std::vector<std::uint32_t> double_frees;  // indices into Trace::frees
  // Lookup by address: block indices sorted by address, and the largest size.
  // Address 0 means unknown (sources without addresses) and matches nothing.
  std::vector<std::uint32_t> by_addr;
  std::uint64_t max_block_bytes = 0;
};

struct MemoryTimeline {
  std::vector<DeviceMemory> devices;  // ordered by device id (host = -1 first)
  // Recorders store a stack per event; equal stacks get one id here so that
  // grouping by stack groups by call site. Block::stack already uses it.
  std::vector<StackId> canonical;
  StackId canonical_stack(StackId id) const { return id < canonical.size() ? canonical[id] : id; }
  const DeviceMemory* device(std::int32_t id) const;
  // Largest peak over devices (0 if no allocation).
  std::uint64_t peak_bytes() const;
};

MemoryTimeline build_memory_timeline(const Trace& trace);

// For every stack id, the smallest id of a stack with the same frames.
std::vector<StackId> canonical_stack_ids(const Trace& trace);

// Live bytes of `memory` at time t (0 before the first event).
std::uint64_t live_bytes_at(const DeviceMemory& memory, std::uint64_t t);

// Blocks grouped by the stack that allocated them, largest total first.
struct StackGroup {
  StackId stack = kNoStack;
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::uint32_t first_block = 0;  // a representative block
};
std::vector<StackGroup> group_by_stack(const DeviceMemory& memory, const std::vector<std::uint32_t>& blocks);

// The block of `memory` that contains addr at time t, or nullptr.
const Block* block_containing(const DeviceMemory& memory, std::uint64_t addr, std::uint64_t t);
// The most recently freed block containing addr whose free precedes t and that
// no live block covers at t (an access to freed memory), or nullptr.
const Block* freed_block_containing(const DeviceMemory& memory, std::uint64_t addr, std::uint64_t t);

}  // namespace gpudiag
