// PyTorch's memory snapshot (torch.cuda.memory._dump_snapshot, PyTorch 2.1
// on): the caching allocator's history per device (device_traces) and its
// segments and blocks at the moment of the snapshot, each with the Python
// frames that allocated it, read with the data-only pickle reader.
//
// What becomes of each history entry:
// - alloc: an allocation with its stack; free_completed: its free (the
//   memory is the allocator's again; free_requested only marks the
//   program dropping it, before its stream's work is done);
// - segment_alloc, segment_map / segment_free, segment_unmap: the memory
//   reserved from CUDA (cudaMalloc'd segments, or pages of an expandable
//   segment), as memory counters with what was allocated then;
// - oom: an out-of-memory with the request and the device's free memory;
// - snapshot: nothing (a marker of when a snapshot was taken).
// Blocks allocated at the snapshot whose allocation the history no longer
// holds (its ring keeps the newest entries) are allocations from before it.
// Where a device's history ends with its out-of-memory (a snapshot taken as
// the request failed, as gpudiag's Python hook and PyTorch's OOM observers
// take it), the segments are as they were then: their largest free block is
// the out-of-memory's, and what they held is what was allocated and
// reserved then. gpudiag's hook adds the device's capacity, which
// PyTorch's snapshot does not hold, under "gpudiag_out_of_memory".
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "pickle_reader.h"

namespace gpudiag {
namespace {

using import::pickle::Value;

constexpr std::int32_t kNotADevice = -2;

enum class Action : std::uint8_t { Alloc, FreeCompleted, SegmentAlloc, SegmentFree, Oom, Unused };

Action action_named(std::string_view a) {
  if (a == "alloc") return Action::Alloc;
  if (a == "free_completed") return Action::FreeCompleted;
  if (a == "segment_alloc" || a == "segment_map") return Action::SegmentAlloc;
  if (a == "segment_free" || a == "segment_unmap") return Action::SegmentFree;
  if (a == "oom") return Action::Oom;
  return Action::Unused;  // free_requested, snapshot, and actions of later releases
}

class SnapshotReader {
 public:
  explicit SnapshotReader(const std::string& name) : pickle_(name), name_(name) {
    trace_.source = TraceSource::TorchSnapshot;
    trace_.path = name;
  }

  Trace read(std::string_view bytes) { return to_trace(pickle_.read(bytes, taker())); }
  Trace read_file(const std::string& path) { return to_trace(pickle_.read_file(path, taker())); }

 private:
  import::pickle::Reader::OnAppend taker() {
    return [this](std::uint32_t list, std::span<Value> items) {
      for (Value& item : items)
        if (take_entry(list, item)) pickle_.release(item);
    };
  }

  Trace to_trace(const Value& top) {
    if (top.kind != Value::Kind::Dict || pickle_.get(top, "segments").kind != Value::Kind::List)
      throw TraceError(name_ + ": a pickle, but not a PyTorch memory snapshot (no dict with \"segments\")");
    // Events were made with their list's number among the lists that
    // got entries; each list's place in device_traces is its device.
    std::unordered_map<std::uint32_t, std::int32_t> device_of_list;
    const Value traces = pickle_.get(top, "device_traces");
    if (traces.kind == Value::Kind::List) {
      const auto& lists = pickle_.items(traces);
      for (std::size_t d = 0; d < lists.size(); ++d)
        if (lists[d].kind == Value::Kind::List) device_of_list[lists[d].index] = static_cast<std::int32_t>(d);
    }
    std::vector<std::int32_t> device(lists_.size(), kNotADevice);
    for (const auto& [list, number] : lists_)
      if (auto it = device_of_list.find(list); it != device_of_list.end()) device[number.number] = it->second;
    const auto held = segments_now(pickle_.get(top, "segments"));
    for (const auto& [list, state] : lists_)
      if (state.last_oom != kNoOom && device[state.number] != kNotADevice)
        if (const auto it = held.find(device[state.number]); it != held.end()) {
          OutOfMemory& oom = trace_.ooms[state.last_oom];
          oom.largest_free_block_bytes = it->second.largest_free;
          trace_.memory_counters.push_back({.time_ns = oom.time_ns, .device = state.number,
                                            .allocated_bytes = it->second.allocated, .reserved_bytes = it->second.reserved});
        }
    place_on_devices(device);
    add_capacity(pickle_.get(top, "gpudiag_out_of_memory"));
    std::unordered_map<std::int32_t, const std::unordered_set<std::uint64_t>*> live_on;
    for (const auto& [list, state] : lists_)
      if (device[state.number] != kNotADevice) live_on[device[state.number]] = &state.live;
    add_blocks_from_before(pickle_.get(top, "segments"), live_on);
    trace_.sort_by_time();
    return std::move(trace_);
  }

  // A history entry (a dict with an "action"), turned into an event of the
  // trace at once, on its list's number for a device until the lists are
  // placed; false for anything else appended to a list (segments, blocks,
  // frames).
  bool take_entry(std::uint32_t list, const Value& item) {
    if (item.kind != Value::Kind::Dict) return false;
    // One pass over the entry's fields (millions of entries: no lookup per field).
    Value action, time, addr, size, stream, frames, device_free;
    const auto& fields = pickle_.items(item);
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
      const std::string_view key = pickle_.as_string(fields[i]);
      Value* to = key == "action" ? &action : key == "addr" ? &addr : key == "size" ? &size : key == "stream" ? &stream
                : key == "time_us" ? &time : key == "frames" ? &frames : key == "device_free" ? &device_free : nullptr;
      if (to != nullptr) *to = fields[i + 1];
    }
    if (action.kind != Value::Kind::String) return false;
    const Action kind = action_named(pickle_.as_string(action));
    if (kind == Action::Unused) return true;  // consumed: nothing of it is kept
    auto it = lists_.try_emplace(list, ListState{static_cast<std::int32_t>(lists_.size()), 0, 0, {}, kNoOom}).first;
    ListState& l = it->second;
    const std::int32_t d = l.number;
    // Entries without time_us (PyTorch before 2.1 wrote none) are a microsecond apart, in their order.
    const std::uint64_t t = (time.kind == Value::Kind::Int ? pickle_.as_u64(time) : untimed_++) * 1000;
    const std::uint64_t bytes = pickle_.as_u64(size), at = pickle_.as_u64(addr), on = pickle_.as_u64(stream);
    l.last_oom = kind == Action::Oom ? trace_.ooms.size() : kNoOom;
    switch (kind) {
      case Action::Alloc:
        trace_.allocs.push_back({.time_ns = t, .addr = at, .bytes = bytes, .kind = MemKind::Device, .device = d,
                                 .stream = on, .tid = 0, .correlation = 0,
                                 .stack = stack_of(frames)});
        l.allocated += bytes;
        l.live.insert(at);
        break;
      case Action::FreeCompleted:
        trace_.frees.push_back({.time_ns = t, .addr = at, .bytes = bytes, .kind = MemKind::Device, .device = d,
                                .stream = on, .tid = 0, .correlation = 0,
                                .stack = stack_of(frames)});
        l.allocated -= std::min(l.allocated, bytes);
        l.live.erase(at);
        break;
      case Action::SegmentAlloc:
      case Action::SegmentFree:
        l.reserved = kind == Action::SegmentAlloc ? l.reserved + bytes : l.reserved - std::min(l.reserved, bytes);
        trace_.memory_counters.push_back(
            {.time_ns = t, .device = d, .allocated_bytes = l.allocated, .reserved_bytes = l.reserved});
        break;
      case Action::Oom:
        trace_.ooms.push_back({.time_ns = t, .requested_bytes = bytes,
                               .free_bytes = pickle_.as_u64(device_free), .capacity_bytes = 0,
                               .device = d, .tid = 0, .stack = stack_of(frames)});
        break;
      case Action::Unused:
        break;
    }
    return true;
  }

  // Python frames, innermost first, as PyTorch lists them; the same list
  // object (PyTorch shares one per distinct traceback) is one stack.
  StackId stack_of(const Value& frames) {
    if (frames.kind != Value::Kind::List) return kNoStack;
    if (auto it = stacks_.find(frames.index); it != stacks_.end()) return it->second;
    Stack s;
    for (const Value& f : pickle_.items(frames)) {
      if (f.kind != Value::Kind::Dict) continue;
      StackFrame frame;
      frame.function = trace_.intern(pickle_.as_string(pickle_.get(f, "name")));
      frame.file = trace_.intern(pickle_.as_string(pickle_.get(f, "filename")));
      frame.line = static_cast<std::uint32_t>(pickle_.as_int(pickle_.get(f, "line")));
      s.frames.push_back(frame);
    }
    const StackId id = s.frames.empty() ? kNoStack : trace_.add_stack(std::move(s));
    stacks_.emplace(frames.index, id);
    return id;
  }

  // Each event moves from its list's number to its list's device; those of
  // a list outside device_traces go.
  void place_on_devices(const std::vector<std::int32_t>& device) {
    const auto place = [&](auto& column) {
      for (auto& e : column) e.device = device[static_cast<std::size_t>(e.device)];
      std::erase_if(column, [](const auto& e) { return e.device == kNotADevice; });
    };
    place(trace_.allocs), place(trace_.frees), place(trace_.memory_counters), place(trace_.ooms);
    for (const std::int32_t d : device)
      if (d != kNotADevice && trace_.device(d) == nullptr)
        trace_.devices.push_back({.id = d, .name = trace_.intern("cuda:" + std::to_string(d)), .memory_bytes = 0});
  }

  // Blocks allocated at the snapshot that the history does not show
  // allocated (older than its ring, or recorded without history): live
  // from before the history's first entry.
  void add_blocks_from_before(const Value& segments,
                              const std::unordered_map<std::int32_t, const std::unordered_set<std::uint64_t>*>& live_on) {
    std::uint64_t first = ~std::uint64_t{0};
    for (const Alloc& a : trace_.allocs) first = std::min(first, a.time_ns);
    for (const Free& f : trace_.frees) first = std::min(first, f.time_ns);
    const std::uint64_t before = first == ~std::uint64_t{0} || first < 2 ? 1 : first - 1;
    std::vector<Alloc> from_before;  // first in time: they go before the history's
    for (const Value& segment : pickle_.items(segments)) {
      const auto device = static_cast<std::int32_t>(pickle_.as_int(pickle_.get(segment, "device")));
      const Value blocks = pickle_.get(segment, "blocks");
      if (blocks.kind != Value::Kind::List) continue;
      std::uint64_t addr = pickle_.as_u64(pickle_.get(segment, "address"));
      for (const Value& b : pickle_.items(blocks)) {
        const std::uint64_t size = pickle_.as_u64(pickle_.get(b, "size"));
        if (const Value a = pickle_.get(b, "address"); a.kind == Value::Kind::Int) addr = pickle_.as_u64(a);
        if (pickle_.as_string(pickle_.get(b, "state")) == "active_allocated") {
          const auto live = live_on.find(device);
          if (live == live_on.end() || !live->second->contains(addr)) {
            const Value requested = pickle_.get(b, "requested_size");
            from_before.push_back({.time_ns = before, .addr = addr,
                                     .bytes = requested.kind == Value::Kind::Int ? pickle_.as_u64(requested) : size,
                                     .kind = MemKind::Device, .device = device,
                                     .stream = pickle_.as_u64(pickle_.get(segment, "stream")), .tid = 0,
                                     .correlation = 0, .stack = stack_of(pickle_.get(b, "frames"))});
          }
        }
        addr += size;
      }
      if (trace_.device(device) == nullptr)
        trace_.devices.push_back({.id = device, .name = trace_.intern("cuda:" + std::to_string(device)), .memory_bytes = 0});
    }
    trace_.allocs.insert(trace_.allocs.begin(), from_before.begin(), from_before.end());
  }

  // What each device's segments hold at the snapshot.
  struct Held {
    std::uint64_t reserved = 0, allocated = 0, largest_free = 0;
  };
  std::unordered_map<std::int32_t, Held> segments_now(const Value& segments) {
    std::unordered_map<std::int32_t, Held> held;
    for (const Value& segment : pickle_.items(segments)) {
      Held& h = held[static_cast<std::int32_t>(pickle_.as_int(pickle_.get(segment, "device")))];
      h.reserved += pickle_.as_u64(pickle_.get(segment, "total_size"));
      const Value blocks = pickle_.get(segment, "blocks");
      if (blocks.kind != Value::Kind::List) continue;
      for (const Value& b : pickle_.items(blocks)) {
        const std::string_view state = pickle_.as_string(pickle_.get(b, "state"));
        const std::uint64_t size = pickle_.as_u64(pickle_.get(b, "size"));
        if (state == "inactive") h.largest_free = std::max(h.largest_free, size);
        else if (state == "active_allocated") h.allocated += size;
      }
    }
    return held;
  }

  // The device's capacity, from what gpudiag's hook added at the out-of-memory.
  void add_capacity(const Value& at_oom) {
    if (at_oom.kind != Value::Kind::Dict) return;
    const auto device = static_cast<std::int32_t>(pickle_.as_int(pickle_.get(at_oom, "device")));
    const std::uint64_t capacity = pickle_.as_u64(pickle_.get(at_oom, "capacity"));
    if (capacity == 0) return;
    for (DeviceDesc& d : trace_.devices)
      if (d.id == device) d.memory_bytes = capacity;
    for (OutOfMemory& o : trace_.ooms)
      if (o.device == device) o.capacity_bytes = capacity;
  }

  static constexpr std::size_t kNoOom = ~std::size_t{0};
  import::pickle::Reader pickle_;
  std::string name_;
  Trace trace_;
  struct ListState {
    std::int32_t number;  // among the lists that got entries, in order
    std::uint64_t allocated, reserved;  // running totals of its device
    std::unordered_set<std::uint64_t> live;  // addresses allocated and not yet freed, in the history's order
    std::size_t last_oom;  // the out-of-memory its history ends with so far (in trace_.ooms), or kNoOom
  };
  std::unordered_map<std::uint32_t, ListState> lists_;  // by the list's container
  std::uint64_t untimed_ = 1;
  std::unordered_map<std::uint32_t, StackId> stacks_;  // by frames list
};

}  // namespace

Trace import_torch_snapshot_bytes(std::string_view bytes, const std::string& name) {
  return SnapshotReader(name).read(bytes);
}

Trace import_torch_snapshot(const std::string& path) { return SnapshotReader(path).read_file(path); }

}  // namespace gpudiag
