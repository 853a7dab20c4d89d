// Writes a Trace as .gdtrace: used to save imported traces and by tests and
// tools that build traces in code. The recorder writes the same layout
// incrementally (tracer/record).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <span>

#include "gdtrace_format.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {
namespace {

using gdtrace::RawEvent;

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  void chunk(gdtrace::ChunkType type, const std::string& payload) {
    gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(type), 0,
                           static_cast<std::uint32_t>(payload.size()),
                           gdtrace::checksum(payload.data(), payload.size())};
    out_.write(reinterpret_cast<const char*>(&h), sizeof h);
    out_.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  }

  void event(std::uint32_t tid, const RawEvent& e) {
    auto& v = pending_[tid];
    v.push_back(e);
    if (v.size() == 4096) flush(tid, v);
  }

  void flush_all() {
    for (auto& [tid, v] : pending_)
      if (!v.empty()) flush(tid, v);
  }

 private:
  void flush(std::uint32_t tid, std::vector<RawEvent>& v) {
    std::string payload(8 + v.size() * sizeof(RawEvent), '\0');
    const std::uint32_t head[2] = {tid, static_cast<std::uint32_t>(v.size())};
    std::memcpy(payload.data(), head, 8);
    std::memcpy(payload.data() + 8, v.data(), v.size() * sizeof(RawEvent));
    chunk(gdtrace::ChunkType::Events, payload);
    v.clear();
  }

  std::ostream& out_;
  std::map<std::uint32_t, std::vector<RawEvent>> pending_;
};

template <class... W>
std::string words(W... w) {
  std::string s;
  ((s.append(reinterpret_cast<const char*>(&w), sizeof w)), ...);
  return s;
}

RawEvent base(EventKind kind, std::int32_t device, std::uint64_t t0, std::uint64_t t1, std::uint64_t stream,
              std::uint64_t correlation, StackId stack) {
  RawEvent e{};
  e.kind = static_cast<std::uint8_t>(kind);
  e.device = device;
  e.t0 = t0;
  e.t1 = t1;
  e.stream = stream;
  e.correlation = correlation;
  e.stack = stack;
  return e;
}

std::uint8_t u8(auto v) { return static_cast<std::uint8_t>(v); }

}  // namespace

void write_gdtrace(const Trace& t, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TraceError(path + ": cannot create: " + std::strerror(errno));
  gdtrace::FileHeader header{};
  std::memcpy(header.magic, gdtrace::kMagic, 8);
  header.version = gdtrace::kVersion;
  header.header_size = sizeof header;
  header.pid = static_cast<std::uint64_t>(t.pid);
  header.start_ns = t.begin_ns();
  out.write(reinterpret_cast<const char*>(&header), sizeof header);

  Writer w(out);
  {
    std::string cmd = t.command;
    w.chunk(gdtrace::ChunkType::Process, words(static_cast<std::int64_t>(t.pid), std::int64_t{0}) + cmd);
  }
  for (std::size_t i = 1; i < t.strings.size(); ++i)
    w.chunk(gdtrace::ChunkType::String, words(static_cast<std::uint32_t>(i)) + std::string(t.strings[static_cast<StringId>(i)]));
  for (const auto& m : t.modules) w.chunk(gdtrace::ChunkType::Module, words(m.base, m.low, m.size) + std::string(t.str(m.path)));
  for (std::size_t i = 1; i < t.stacks.size(); ++i) {
    std::string p = words(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(t.stacks[i].frames.size()));
    for (const auto& f : t.stacks[i].frames) p += words(f.ip);
    w.chunk(gdtrace::ChunkType::Stack, p);
  }
  for (const auto& d : t.devices) {
    RawEvent e = base(EventKind::Device, d.id, 0, 0, 0, 0, 0);
    e.x = d.name;
    e.p[0] = d.memory_bytes;
    w.event(0, e);
  }
  for (const auto& s : t.streams) {
    RawEvent e = base(EventKind::Stream, s.device, 0, 0, s.id, 0, 0);
    e.x = s.name;
    w.event(0, e);
  }
  for (const auto& a : t.allocs) {
    RawEvent e = base(EventKind::Alloc, a.device, a.time_ns, a.time_ns, a.stream, a.correlation, a.stack);
    e.a = u8(a.kind), e.p[0] = a.addr, e.p[1] = a.bytes;
    w.event(a.tid, e);
  }
  for (const auto& a : t.frees) {
    RawEvent e = base(EventKind::Free, a.device, a.time_ns, a.time_ns, a.stream, a.correlation, a.stack);
    e.a = u8(a.kind), e.p[0] = a.addr, e.p[1] = a.bytes;
    w.event(a.tid, e);
  }
  for (const auto& m : t.memcpys) {
    RawEvent e = base(EventKind::Memcpy, m.device, m.start_ns, m.end_ns, m.stream, m.correlation, m.stack);
    e.a = u8(m.copy), e.b = u8(m.src_kind), e.c = u8(m.dst_kind);
    e.flags = m.async ? gdtrace::kFlagAsync : 0;
    e.x = static_cast<std::uint32_t>(m.peer_device);
    e.p[0] = m.dst, e.p[1] = m.src, e.p[2] = m.bytes;
    w.event(m.tid, e);
  }
  for (const auto& m : t.memsets) {
    RawEvent e = base(EventKind::Memset, m.device, m.start_ns, m.end_ns, m.stream, m.correlation, m.stack);
    e.a = u8(m.kind), e.flags = m.async ? gdtrace::kFlagAsync : 0, e.x = m.value;
    e.p[0] = m.addr, e.p[1] = m.bytes;
    w.event(m.tid, e);
  }
  for (const auto& k : t.kernels) {
    RawEvent e = base(EventKind::Kernel, k.device, k.start_ns, k.end_ns, k.stream, k.correlation, k.stack);
    e.x = k.name;
    const std::uint32_t d[8] = {k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.shared_bytes, 0};
    std::memcpy(e.p, d, sizeof d);
    w.event(k.tid, e);
  }
  for (const auto& s : t.syncs) {
    RawEvent e = base(EventKind::Sync, s.device, s.start_ns, s.end_ns, s.stream, s.correlation, s.stack);
    e.a = u8(s.kind), e.p[0] = s.event;
    w.event(s.tid, e);
  }
  for (const auto& a : t.api_calls) {
    RawEvent e = base(EventKind::Api, a.device, a.start_ns, a.end_ns, 0, a.correlation, a.stack);
    e.a = u8(a.domain), e.x = a.name, e.p[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(a.status));
    e.p[1] = a.symbol;
    w.event(a.tid, e);
  }
  for (const auto& h : t.host_accesses) {
    if (h.guarded_copy != 0) continue;  // a GuardedAccess chunk, below
    RawEvent e = base(EventKind::HostAccess, h.device, h.time_ns, h.time_ns, 0, 0, h.stack);
    e.a = u8(h.access), e.p[0] = h.addr, e.p[1] = h.bytes;
    w.event(h.tid, e);
  }
  for (const auto& o : t.ooms) {
    RawEvent e = base(EventKind::OutOfMemory, o.device, o.time_ns, o.time_ns, 0, 0, o.stack);
    e.p[0] = o.requested_bytes, e.p[1] = o.free_bytes, e.p[2] = o.capacity_bytes;
    w.event(o.tid, e);
  }
  for (const auto& f : t.findings) {
    RawEvent e = base(EventKind::Finding, kHostDevice, f.time_ns, f.time_ns, 0, 0, f.stack);
    e.x = f.rule_id, e.p[0] = f.message;
    w.event(f.tid, e);
  }
  for (const auto& r : t.ranges) {
    RawEvent e = base(EventKind::Range, kHostDevice, r.start_ns, r.end_ns, 0, 0, 0);
    e.x = r.name;
    w.event(r.tid, e);
  }
  for (const auto& c : t.memory_counters) {
    RawEvent e = base(EventKind::MemoryCounter, c.device, c.time_ns, c.time_ns, 0, 0, 0);
    e.p[0] = c.allocated_bytes, e.p[1] = c.reserved_bytes;
    w.event(0, e);
  }
  w.flush_all();
  for (const auto& c : t.crashes) {
    const Stack& stack = t.stack(c.stack);
    const auto frames = std::span(stack.frames).first(std::min<std::size_t>(stack.frames.size(), UINT16_MAX));
    const std::uint16_t flags = stack.starts_at_fault ? gdtrace::kCrashStartsAtFault : 0;
    std::string p = words(c.signal, c.code, c.address, c.time_ns, c.tid, static_cast<std::uint16_t>(frames.size()), flags);
    for (const auto& f : frames) p += words(f.ip);
    w.chunk(gdtrace::ChunkType::Crash, p);
  }
  for (const auto& h : t.host_accesses) {
    if (h.guarded_copy == 0) continue;
    const Stack& stack = t.stack(h.stack);
    const auto frames = std::span(stack.frames).first(std::min<std::size_t>(stack.frames.size(), UINT16_MAX));
    const std::uint16_t flags = (stack.starts_at_fault ? gdtrace::kCrashStartsAtFault : 0) |
                                (h.access == AccessKind::Write ? gdtrace::kGuardedWrite : 0);
    std::string p = words(h.time_ns, h.addr, h.guarded_copy, h.tid, static_cast<std::uint16_t>(frames.size()), flags);
    for (const auto& f : frames) p += words(f.ip);
    w.chunk(gdtrace::ChunkType::GuardedAccess, p);
  }
  if (t.dropped_events != 0) w.chunk(gdtrace::ChunkType::Dropped, words(t.dropped_events));
  // A trace whose recording did not stop cleanly is written without the End chunk, as it was recorded.
  if (t.stopped_cleanly) w.chunk(gdtrace::ChunkType::End, words(static_cast<std::uint64_t>(t.event_count())));
  out.flush();
  if (!out) throw TraceError(path + ": write failed");
}

}  // namespace gpudiag
