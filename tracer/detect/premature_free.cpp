// GD004 premature-free at run time: memory freed while copies or memsets on
// another stream still used it, copies, memsets, host accesses or the fault
// a program died of inside a freed range, and double frees.
#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

struct Touch {
  std::uint64_t start_ns, end_ns, addr, bytes, stream;
  std::int32_t device;
  StackId stack;
  const char* what;
};

std::vector<Touch> device_touches(const Trace& t) {
  std::vector<Touch> out;
  for (const Memcpy& c : t.memcpys) {
    if (!is_host(c.dst_kind)) out.push_back({c.start_ns, c.end_ns, c.dst, c.bytes, c.stream, c.device, c.stack, "copy into"});
    if (!is_host(c.src_kind)) out.push_back({c.start_ns, c.end_ns, c.src, c.bytes, c.stream, c.device, c.stack, "copy from"});
  }
  for (const Memset& m : t.memsets) out.push_back({m.start_ns, m.end_ns, m.addr, m.bytes, m.stream, m.device, m.stack, "memset of"});
  return out;
}

}  // namespace

void detect_premature_free(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const auto touches = device_touches(t);
  for (const DeviceMemory& m : ctx.memory.devices) {
    // Frees while work on another stream still touches the block: find the
    // block each copy or memset touched when it started.
    for (const Touch& w : touches) {
      if (w.device != m.device) continue;
      const Block* b = block_containing(m, w.addr, w.start_ns);
      if (!b || b->free_ns == kStillLive || w.end_ns <= b->free_ns) continue;
      if (w.stream == b->free_stream) continue;  // stream-ordered: the free waits for it
      Finding f = make_finding(
          "GD004", fmt::format("{} at 0x{:x} freed while a {} it on stream {} was still running (it ended {} after the "
                               "free, which was ordered on stream {}); wait for that stream (an event, "
                               "cudaStreamWaitEvent) before freeing, or free on the stream that uses it",
                               format_bytes(b->bytes), b->addr, w.what, w.stream, format_duration(w.end_ns - b->free_ns),
                               b->free_stream));
      f.stack = frames_of(t, b->free_stack);
      f.notes.push_back({"the pending work was issued here", {}, frames_of(t, w.stack)});
      f.notes.push_back({"the memory was allocated here", {}, frames_of(t, b->stack)});
      out.push_back(std::move(f));
    }
    // Use after free.
    auto after_free = [&](std::uint64_t addr, std::uint64_t time, StackId stack, std::string_view what) {
      const Block* b = freed_block_containing(m, addr, time);
      if (!b) return;
      Finding f = make_finding("GD004", fmt::format("{} 0x{:x}, inside {} that was freed {} earlier; the memory may "
                                                    "already belong to another allocation: keep the buffer alive "
                                                    "until every use of it is done",
                                                    what, addr, format_bytes(b->bytes), format_duration(time - b->free_ns)));
      f.stack = frames_of(t, stack);
      f.notes.push_back({"it was freed here", {}, frames_of(t, b->free_stack)});
      f.notes.push_back({"and allocated here", {}, frames_of(t, b->stack)});
      out.push_back(std::move(f));
    };
    for (const Touch& w : touches)
      if (w.device == m.device) after_free(w.addr, w.start_ns, w.stack, w.what);
    if (m.device != kHostDevice)
      for (const HostAccess& a : t.host_accesses) after_free(a.addr, a.time_ns, a.stack, "host access to");
    for (const Crash& c : t.crashes)
      if (is_memory_fault(c)) after_free(c.address, c.time_ns, c.stack, "the program died of a fault touching");
    for (std::uint32_t i : m.double_frees) {
      const Free& fr = t.frees[i];
      Finding f = make_finding("GD004", fmt::format("double free of 0x{:x} on device {}: it was already freed and not "
                                                    "allocated again",
                                                    fr.addr, m.device));
      f.stack = frames_of(t, fr.stack);
      out.push_back(std::move(f));
    }
  }
}

}  // namespace gpudiag
