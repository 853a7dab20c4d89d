#include "gpudiag/analysis/memory_timeline.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace gpudiag {
namespace {

struct Step {
  std::uint64_t time_ns;
  bool is_free;  // allocations first on equal times: a block freed in the same ns it was made still closes
  std::uint32_t index;
};

DeviceMemory& device_slot(std::map<std::int32_t, DeviceMemory>& by_device, std::int32_t id) {
  auto [it, fresh] = by_device.try_emplace(id);
  if (fresh) it->second.device = id;
  return it->second;
}

void finish_device(const Trace& trace, DeviceMemory& m) {
  // Peak from the step function, then which blocks were live at it.
  for (const auto& p : m.live)
    if (p.live_bytes > m.peak_bytes) {
      m.peak_bytes = p.live_bytes;
      m.peak_ns = p.time_ns;
    }
  for (std::uint32_t i = 0; i < m.blocks.size(); ++i) {
    const Block& b = m.blocks[i];
    if (m.peak_bytes > 0 && b.live_at(m.peak_ns)) m.live_at_peak.push_back(i);
    if (b.free_ns == kStillLive) m.leaked.push_back(i);
    m.max_block_bytes = std::max(m.max_block_bytes, b.bytes);
  }
  m.by_addr.resize(m.blocks.size());
  for (std::uint32_t i = 0; i < m.by_addr.size(); ++i) m.by_addr[i] = i;
  // Ties broken by index: the order of a stable sort, at the cost of an unstable one.
  std::sort(m.by_addr.begin(), m.by_addr.end(), [&](std::uint32_t a, std::uint32_t b) {
    return m.blocks[a].addr != m.blocks[b].addr ? m.blocks[a].addr < m.blocks[b].addr : a < b;
  });
  for (const auto& c : m.counters) {
    m.peak_allocated_counter = std::max(m.peak_allocated_counter, c.allocated_bytes);
    m.peak_reserved = std::max(m.peak_reserved, c.reserved_bytes);
  }
  if (const DeviceDesc* d = trace.device(m.device)) m.capacity_bytes = d->memory_bytes;
  for (const auto& oom : trace.ooms)
    if (oom.device == m.device && oom.capacity_bytes > 0) m.capacity_bytes = oom.capacity_bytes;
}

}  // namespace

const DeviceMemory* MemoryTimeline::device(std::int32_t id) const {
  for (const auto& d : devices)
    if (d.device == id) return &d;
  return nullptr;
}

std::uint64_t MemoryTimeline::peak_bytes() const {
  std::uint64_t peak = 0;
  for (const auto& d : devices) peak = std::max(peak, d.peak_bytes);
  return peak;
}

std::vector<StackId> canonical_stack_ids(const Trace& trace) {
  std::vector<StackId> out(trace.stacks.size());
  std::unordered_map<std::string, StackId> first;  // frames' addresses (and symbols, for imports) -> id
  std::string key;
  for (StackId id = 0; id < trace.stacks.size(); ++id) {
    key.clear();
    for (const StackFrame& f : trace.stacks[id].frames) {
      key.append(reinterpret_cast<const char*>(&f.ip), sizeof f.ip);
      key.append(reinterpret_cast<const char*>(&f.function), sizeof f.function);
      key.append(reinterpret_cast<const char*>(&f.line), sizeof f.line);
    }
    out[id] = first.try_emplace(key, id).first->second;
  }
  return out;
}

MemoryTimeline build_memory_timeline(const Trace& trace) {
  MemoryTimeline timeline;
  timeline.canonical = canonical_stack_ids(trace);
  std::map<std::int32_t, DeviceMemory> by_device;
  std::map<std::int32_t, std::vector<Step>> steps;
  for (std::uint32_t i = 0; i < trace.allocs.size(); ++i)
    steps[trace.allocs[i].device].push_back({trace.allocs[i].time_ns, false, i});
  for (std::uint32_t i = 0; i < trace.frees.size(); ++i)
    steps[trace.frees[i].device].push_back({trace.frees[i].time_ns, true, i});
  for (const auto& c : trace.memory_counters) device_slot(by_device, c.device).counters.push_back(c);

  for (auto& [device, list] : steps) {
    DeviceMemory& m = device_slot(by_device, device);
    const auto earlier = [](const Step& a, const Step& b) {
      return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.is_free < b.is_free;
    };
    // The allocations, then the frees: each already in time order when the
    // trace is (sort_by_time), and then a merge is all it takes.
    const auto frees = std::find_if(list.begin(), list.end(), [](const Step& s) { return s.is_free; });
    if (std::is_sorted(list.begin(), frees, earlier) && std::is_sorted(frees, list.end(), earlier))
      std::inplace_merge(list.begin(), frees, list.end(), earlier);
    else
      std::stable_sort(list.begin(), list.end(), earlier);
    std::unordered_map<std::uint64_t, std::uint32_t> open;      // addr -> block
    std::unordered_map<std::uint64_t, std::uint32_t> was_freed;  // addr -> block freed last
    // Sources without addresses (old Kineto host events) record address 0:
    // such a free closes the most recent open block of the same size.
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> open_by_size;
    std::uint64_t live = 0;
    m.live.reserve(list.size());
    auto close = [&](std::uint32_t block, std::uint64_t t, const Free* f) {
      Block& b = m.blocks[block];
      b.free_ns = t;
      if (f) {
        b.free_stack = timeline.canonical_stack(f->stack);
        b.free_stream = f->stream;
      }
      live -= b.bytes;
      if (b.addr == 0) return;
      open.erase(b.addr);
      was_freed[b.addr] = block;
    };
    for (const Step& s : list) {
      if (!s.is_free) {
        const Alloc& a = trace.allocs[s.index];
        // An address handed out again without a free in between: the free was
        // not recorded; end the old block here so live bytes stay right.
        if (auto it = open.find(a.addr); a.addr != 0 && it != open.end()) close(it->second, a.time_ns, nullptr);
        Block b;
        b.addr = a.addr;
        b.bytes = a.bytes;
        b.alloc_ns = a.time_ns;
        b.stack = timeline.canonical_stack(a.stack);
        b.kind = a.kind;
        b.stream = a.stream;
        b.alloc_index = s.index;
        if (a.addr == 0) {
          open_by_size[a.bytes].push_back(static_cast<std::uint32_t>(m.blocks.size()));
        } else {
          open[a.addr] = static_cast<std::uint32_t>(m.blocks.size());
          was_freed.erase(a.addr);
        }
        m.blocks.push_back(b);
        live += a.bytes;
      } else {
        const Free& f = trace.frees[s.index];
        if (f.addr == 0) {
          auto it = open_by_size.find(f.bytes);
          if (f.bytes == 0 || it == open_by_size.end() || it->second.empty()) {
            ++m.unmatched_frees;
            continue;
          }
          close(it->second.back(), f.time_ns, &f);
          it->second.pop_back();
        } else if (auto it = open.find(f.addr); it != open.end()) {
          close(it->second, f.time_ns, &f);
        } else if (was_freed.count(f.addr)) {
          m.double_frees.push_back(s.index);
          continue;
        } else {
          ++m.unmatched_frees;
          continue;
        }
      }
      if (!m.live.empty() && m.live.back().time_ns == s.time_ns)
        m.live.back().live_bytes = live;
      else
        m.live.push_back({s.time_ns, live});
    }
  }
  for (auto& [id, m] : by_device) {
    finish_device(trace, m);
    timeline.devices.push_back(std::move(m));
  }
  return timeline;
}

std::uint64_t live_bytes_at(const DeviceMemory& memory, std::uint64_t t) {
  auto it = std::upper_bound(memory.live.begin(), memory.live.end(), t,
                             [](std::uint64_t v, const LivePoint& p) { return v < p.time_ns; });
  return it == memory.live.begin() ? 0 : std::prev(it)->live_bytes;
}

std::vector<StackGroup> group_by_stack(const DeviceMemory& memory, const std::vector<std::uint32_t>& blocks) {
  std::unordered_map<StackId, StackGroup> groups;
  for (std::uint32_t i : blocks) {
    const Block& b = memory.blocks[i];
    auto [it, fresh] = groups.try_emplace(b.stack);
    if (fresh) {
      it->second.stack = b.stack;
      it->second.first_block = i;
    }
    it->second.bytes += b.bytes;
    ++it->second.count;
  }
  std::vector<StackGroup> out;
  out.reserve(groups.size());
  for (auto& [id, g] : groups) out.push_back(g);
  std::sort(out.begin(), out.end(), [](const StackGroup& a, const StackGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  return out;
}

namespace {

// For each address a block starts at, from addr leftwards as far as a block
// can reach addr: the newest block starting there that was allocated by t
// and contains addr (blocks at one address follow each other in time, so it
// is the only one that can be live at t, and the last freed before t). Calls f(block) until f returns true. A binary search per address,
// not a walk over its blocks: a long run reuses an address many thousands
// of times.
template <class F>
const Block* scan_containing(const DeviceMemory& m, std::uint64_t addr, std::uint64_t t, F&& f) {
  const auto starts_after = [&](std::uint64_t v, std::uint32_t i) { return v < m.blocks[i].addr; };
  const auto starts_before = [&](std::uint32_t i, std::uint64_t v) { return m.blocks[i].addr < v; };
  auto end = std::upper_bound(m.by_addr.begin(), m.by_addr.end(), addr, starts_after);
  while (end != m.by_addr.begin()) {
    const std::uint64_t start = m.blocks[*(end - 1)].addr;
    if (addr - start >= m.max_block_bytes) break;  // no block starting further left can reach addr
    const auto begin = std::lower_bound(m.by_addr.begin(), end, start, starts_before);
    // In allocation order within one address (by_addr breaks ties by index).
    auto by_t = std::upper_bound(begin, end, t, [&](std::uint64_t v, std::uint32_t i) { return v < m.blocks[i].alloc_ns; });
    // The newest by t that reaches addr: an address reused for a smaller
    // block leaves the older, larger one the only one that does.
    while (by_t != begin) {
      const Block& b = m.blocks[*--by_t];
      if (addr >= b.addr + b.bytes) continue;
      if (f(b)) return &b;
      break;
    }
    end = begin;
  }
  return nullptr;
}

}  // namespace

const Block* block_containing(const DeviceMemory& memory, std::uint64_t addr, std::uint64_t t) {
  if (addr == 0) return nullptr;  // unknown address (the source did not record it)
  return scan_containing(memory, addr, t, [&](const Block& b) { return b.live_at(t); });
}

const Block* freed_block_containing(const DeviceMemory& memory, std::uint64_t addr, std::uint64_t t) {
  if (addr == 0 || block_containing(memory, addr, t)) return nullptr;
  const Block* latest = nullptr;
  scan_containing(memory, addr, t, [&](const Block& b) {
    if (b.free_ns <= t && (!latest || b.free_ns > latest->free_ns)) latest = &b;
    return false;
  });
  return latest;
}

}  // namespace gpudiag
