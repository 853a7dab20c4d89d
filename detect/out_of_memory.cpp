// GD008 out-of-memory at run time: at each failed request, who held the
// memory (live allocations by stack), the peak against capacity, and how
// much the allocator had reserved but not handed out (fragmentation/cache).
// The failed requests are the recorded out-of-memory events, and the
// allocation calls that returned out-of-memory with no such event (traces
// that recorded only the call).
#include <algorithm>

#include <fmt/format.h>

#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

// The device of an allocation call that recorded none: the host for pinned
// memory, else the one device the trace used (0 when it used none or several).
std::int32_t device_of_call(const DetectContext& ctx, std::string_view name) {
  if (name.find("Host") != std::string_view::npos) return kHostDevice;
  std::int32_t device = 0, devices = 0;
  for (const DeviceMemory& m : ctx.memory.devices)
    if (m.device != kHostDevice) device = m.device, ++devices;
  return devices == 1 ? device : 0;
}

std::vector<OutOfMemory> failed_requests(const DetectContext& ctx) {
  const Trace& t = ctx.trace;
  std::vector<OutOfMemory> all = t.ooms;
  for (const ApiCall& a : t.api_calls) {
    if (a.status != kCudaOutOfMemory || !is_allocation_call(t.str(a.name))) continue;
    const bool recorded = std::any_of(t.ooms.begin(), t.ooms.end(), [&](const OutOfMemory& o) {
      return o.time_ns >= a.start_ns && o.time_ns <= a.end_ns && (o.tid == a.tid || o.tid == 0 || a.tid == 0);
    });
    if (!recorded)
      all.push_back({.time_ns = a.end_ns,
                     .device = a.device != kHostDevice ? a.device : device_of_call(ctx, t.str(a.name)),
                     .tid = a.tid,
                     .stack = a.stack});
  }
  return all;
}

// PyTorch's profiler and snapshots name the CPU allocator's memory as the
// host's; a CUDA trace's host allocations are the pinned ones.
std::string host_memory_label(const Trace& t) {
  return t.source == TraceSource::Kineto || t.source == TraceSource::TorchSnapshot
             ? "the host (PyTorch's CPU allocator)"
             : "the host (pinned memory)";
}

std::string request_text(const OutOfMemory& oom) {
  return oom.requested_bytes ? fmt::format("a request for {}", format_bytes(oom.requested_bytes)) : std::string("a request");
}

// Holders seen through Python frames: the advice is PyTorch's.
bool held_from_python(const Trace& t, const DeviceMemory& m, const std::vector<std::uint32_t>& blocks) {
  if (t.source == TraceSource::TorchSnapshot) return true;
  return std::any_of(blocks.begin(), blocks.end(), [&](std::uint32_t i) {
    const StackId s = m.blocks[i].stack;
    if (s >= t.stacks.size()) return false;
    const auto& frames = t.stacks[s].frames;
    return std::any_of(frames.begin(), frames.end(), [&](const StackFrame& f) { return t.str(f.file).ends_with(".py"); });
  });
}

// What PyTorch's own message says, in its words: "Tried to allocate X. GPU 0
// has a total capacity of C of which F is free. Of the allocated memory A is
// allocated by PyTorch, and R is reserved by PyTorch but unallocated.", with
// the largest free block where the snapshot at the failure shows it.
std::string pytorch_terms(const OutOfMemory& oom, const std::string& where, std::uint64_t capacity, std::uint64_t live,
                          std::uint64_t unallocated) {
  std::string msg = fmt::format("out of memory on {}: tried to allocate {}",
                                where, oom.requested_bytes ? format_bytes(oom.requested_bytes) : std::string("more"));
  if (capacity && oom.free_bytes)
    msg += fmt::format("; the GPU has a total capacity of {} of which {} is free", format_bytes(capacity),
                       format_bytes(oom.free_bytes));
  else if (oom.free_bytes)
    msg += fmt::format("; the GPU had {} free", format_bytes(oom.free_bytes));
  else if (capacity)
    msg += fmt::format("; the GPU has a total capacity of {}", format_bytes(capacity));
  msg += fmt::format("; {} is allocated by PyTorch (live tensors)", format_bytes(live));
  if (unallocated) {
    msg += fmt::format(" and {} is reserved by PyTorch but unallocated", format_bytes(unallocated));
    if (oom.largest_free_block_bytes)
      msg += fmt::format(", whose largest free block is {}{}", format_bytes(oom.largest_free_block_bytes),
                         oom.largest_free_block_bytes < oom.requested_bytes ? ", too small for the request" : "");
  }
  // PyTorch's "this process has X memory in use" read the other way: what
  // neither its tensors nor its cache hold is held outside its allocator.
  const std::uint64_t pytorch = live + unallocated;
  if (capacity && oom.free_bytes && capacity > oom.free_bytes + pytorch) {
    const std::uint64_t outside = capacity - oom.free_bytes - pytorch;
    if (outside >= std::max<std::uint64_t>(1ull << 30, capacity / 10))
      msg += fmt::format("; {} is in use outside PyTorch's allocator (other processes on the GPU, the CUDA context, "
                         "NCCL and cuDNN workspaces), which freeing tensors does not return",
                         format_bytes(outside));
  }
  return msg;
}

}  // namespace

void detect_out_of_memory(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  for (const OutOfMemory& oom : failed_requests(ctx)) {
    const DeviceMemory* m = ctx.memory.device(oom.device);
    const std::uint64_t capacity = oom.capacity_bytes ? oom.capacity_bytes : (m ? m->capacity_bytes : 0);
    std::uint64_t live = m ? live_bytes_at(*m, oom.time_ns) : 0;
    // Reserved but unallocated memory at the failure: the caching
    // allocator's pool, or fragmentation when the request still did not fit.
    std::uint64_t unallocated = 0;
    std::vector<std::uint32_t> live_blocks;
    if (m) {
      const MemoryCounter* last = nullptr;
      for (const MemoryCounter& c : m->counters)
        if (c.time_ns <= oom.time_ns) last = &c;
      if (last && last->reserved_bytes > last->allocated_bytes) unallocated = last->reserved_bytes - last->allocated_bytes;
      // The allocator's total written with the failure also counts what was
      // allocated before a profiling window opened, which no block shows.
      if (last && last->time_ns == oom.time_ns) live = std::max(live, last->allocated_bytes);
      for (std::uint32_t i = 0; i < m->blocks.size(); ++i)
        if (m->blocks[i].live_at(oom.time_ns)) live_blocks.push_back(i);
    }
    const std::string where = oom.device != kHostDevice ? t.device_label(oom.device) : host_memory_label(t);
    std::string msg;
    if (m && held_from_python(t, *m, live_blocks)) {
      msg = pytorch_terms(oom, where, capacity, live, unallocated);
      if (m->peak_bytes > live) msg += fmt::format("; the peak was {}", format_bytes(m->peak_bytes));
      msg += "; drop references kept across steps (a loss or an output kept with its graph, tensors appended to a "
             "list), let optimizer.zero_grad(set_to_none=True) free the gradients, checkpoint activations "
             "(torch.utils.checkpoint), or use a smaller batch";
      // PyTorch's own advice, when what is reserved but unallocated would have held the request.
      if (unallocated >= std::max<std::uint64_t>(oom.requested_bytes, 1))
        msg += "; the reserved but unallocated memory would hold the request but is split: set "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against the fragmentation";
    } else {
      msg = fmt::format("out of memory on {}: {} failed with {} live", where, request_text(oom), format_bytes(live));
      if (capacity) msg += fmt::format(" of {} capacity", format_bytes(capacity));
      if (oom.free_bytes) msg += fmt::format(" ({} reported free)", format_bytes(oom.free_bytes));
      if (m) msg += fmt::format("; the trace's peak was {}", format_bytes(m->peak_bytes));
      msg += "; free what is no longer needed (see the largest holders below), use a smaller batch, or checkpoint "
             "activations";
    }
    Finding f = make_finding(ctx, std::move(msg));
    f.stack = frames_of(t, oom.stack);
    if (m) {
      if (unallocated)
        f.notes.push_back({fmt::format("the allocator had {} reserved but not allocated (cached or fragmented)",
                                       format_bytes(unallocated)),
                           {}, {}});
      const auto groups = group_by_stack(*m, live_blocks);
      for (std::size_t i = 0; i < groups.size() && i < ctx.options.max_groups; ++i)
        f.notes.push_back({fmt::format("{} live in {} allocation{} from here", format_bytes(groups[i].bytes),
                                       groups[i].count, groups[i].count == 1 ? "" : "s"),
                           {}, frames_of(t, groups[i].stack)});
    }
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
