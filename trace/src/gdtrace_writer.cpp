// Writes a Trace as .gdtrace: used to save imported traces and by tests and
// tools that build traces in code. The recorder writes the same layout
// incrementally (record/src).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "chunk_writing.h"
#include "event_codec.h"
#include "gdtrace_format.h"
#include "gpudiag/descriptors.h"
#include "gpudiag/trace_io.h"
#include "identity_payload.h"
#include "segment_ring.h"

namespace gpudiag {
namespace {

using gdtrace::RawEvent;
using gdtrace::words;

// Chunks go to the file, events to the segment ring's current file when
// the trace is bounded.
class Writer {
 public:
  Writer(int fd, gdtrace::SegmentRing* ring) : fd_(fd), ring_(ring) {}

  void chunk(gdtrace::ChunkType type, const std::string& payload) {
    const std::string chunk = gdtrace::chunk_bytes(type, payload);
    ok_ = ok_ && gdtrace::write_all(fd_, chunk.data(), chunk.size());
  }
  bool ok() const { return ok_; }

  void event(std::uint32_t tid, const RawEvent& e) {
    auto& v = pending_[tid];
    v.push_back(e);
    if (v.size() == kChunkEvents) flush(tid, v);
  }

  void flush_all() {
    for (auto& [tid, v] : pending_)
      if (!v.empty()) flush(tid, v);
  }

 private:
  static constexpr std::size_t kChunkEvents = 4096;

  // Compressed as the recorder's writer thread compresses.
  void flush(std::uint32_t tid, std::vector<RawEvent>& v) {
    const std::string chunk = gdtrace::events_chunk(tid, v, deflater_);
    ok_ = ok_ && gdtrace::write_all(events_fd(), chunk.data(), chunk.size());
    if (ring_ != nullptr) ring_->took_events();
    v.clear();
  }

  int events_fd() const { return ring_ != nullptr ? ring_->events_fd() : fd_; }

  int fd_;
  gdtrace::SegmentRing* ring_;
  bool ok_ = true;
  gdtrace::Deflater deflater_{kChunkEvents};
  std::map<std::uint32_t, std::vector<RawEvent>> pending_;
};

// Events between two Drained markers, as a writer pass of a busy recorder writes.
constexpr std::size_t kEventsPerPass = 1024;

// The thread an event happened on (0: none recorded).
template <class Event>
std::uint32_t tid_of(const Event& e) {
  if constexpr (requires { e.tid; })
    return e.tid;
  else
    return 0;
}

// Accesses the copy guard caught are written as GuardedAccess chunks, as the
// recorder writes them, which keep that their stack starts at the faulting
// instruction.
template <class Event>
bool written_as_event(const Event& e) {
  if constexpr (std::is_same_v<Event, HostAccess>)
    return e.guarded_copy == 0;
  else
    return true;
}

}  // namespace

void write_gdtrace(const Trace& t, const std::string& path) { write_gdtrace(t, path, 0); }

void write_gdtrace(const Trace& t, const std::string& path, std::uint64_t max_bytes) {
  const int fd = open_above_stdio(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) throw TraceError(path + ": cannot create: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  gdtrace::FileHeader header{};
  std::memcpy(header.magic, gdtrace::kMagic, 8);
  header.version = gdtrace::kSingleFileVersion;
  header.header_size = sizeof header;
  header.pid = static_cast<std::uint64_t>(t.pid);
  header.start_ns = t.begin_ns();
  if (!gdtrace::write_all(fd, &header, sizeof header))
    throw TraceError(path + ": write failed");
  std::optional<gdtrace::SegmentRing> ring;
  if (max_bytes != 0) ring.emplace(fd, path, header, max_bytes);

  Writer w(fd, ring ? &*ring : nullptr);
  {
    std::string cmd = t.command;
    w.chunk(gdtrace::ChunkType::Process, words(static_cast<std::int64_t>(t.pid), std::int64_t{0}) + cmd);
  }
  if (const JobPlace& job = t.job; job.rank >= 0 || !job.host.empty() || !job.launcher.empty() ||
                                   !job.backend.empty() || job.epoch_offset_known) {
    const gdtrace::IdentityPayload id{
        .pid = t.pid,
        .rank = job.rank,
        .local_rank = job.local_rank,
        .world_size = job.world_size,
        .flags = job.epoch_offset_known ? gdtrace::kEpochOffsetKnown : 0,
        .epoch_offset_ns = job.epoch_offset_ns,
        .epoch_offset_uncertainty_ns = job.epoch_offset_uncertainty_ns,
        .launcher = job.launcher,
        .host = job.host,
        .backend = job.backend};
    std::string payload(gdtrace::identity_size(id), '\0');
    if (gdtrace::encode_identity(id, payload.data(), payload.size()) != 0) w.chunk(gdtrace::ChunkType::Identity, payload);
  }
  for (std::size_t i = 1; i < t.strings.size(); ++i)
    w.chunk(gdtrace::ChunkType::String, words(static_cast<std::uint32_t>(i)) + std::string(t.strings[static_cast<StringId>(i)]));
  for (const auto& m : t.modules) w.chunk(gdtrace::ChunkType::Module, words(m.base, m.low, m.size) + std::string(t.str(m.path)));
  for (std::size_t i = 1; i < t.stacks.size(); ++i) {
    std::string p = words(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(t.stacks[i].frames.size()));
    for (const auto& f : t.stacks[i].frames) p += words(f.ip);
    w.chunk(gdtrace::ChunkType::Stack, p);
  }
  for (const auto& d : t.devices) w.event(0, gdtrace::to_raw(gdtrace::encode(d)));
  for (const auto& st : t.streams) w.event(0, gdtrace::to_raw(gdtrace::encode(st)));
  // In time order, as threads record them, with the writer thread's Drained
  // marker after each pass: a file of it cut anywhere reads as a recording
  // cut there would.
  struct Timed {
    std::uint64_t time;
    std::uint32_t tid;
    RawEvent raw;
  };
  std::vector<Timed> events;
  events.reserve(t.event_count());
  t.for_each_event_column([&](const auto& column) {
    for (const auto& e : column)
      if (written_as_event(e)) events.push_back({start_of(e), tid_of(e), gdtrace::to_raw(gdtrace::encode(e))});
  });
  std::stable_sort(events.begin(), events.end(), [](const Timed& a, const Timed& b) { return a.time < b.time; });
  for (std::size_t i = 0; i < events.size(); ++i) {
    w.event(events[i].tid, events[i].raw);
    const bool pass_ends = (i + 1) % kEventsPerPass == 0 && i + 1 < events.size();
    if (pass_ends) {
      w.flush_all();
      w.chunk(gdtrace::ChunkType::Drained, words(events[i + 1].time));  // every event before the next one's time
      if (ring && !ring->maintain()) throw TraceError(path + ": cannot write its segment files");
    }
  }
  w.flush_all();
  if (ring && !ring->maintain(true, true)) throw TraceError(path + ": cannot write its segment files");
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
  if (t.exit_status >= 0 && t.exit_status <= 255) w.chunk(gdtrace::ChunkType::Exit, words(t.exit_status, std::uint32_t{0}));
  // A trace whose recording did not stop cleanly is written without the End chunk, as it was recorded.
  if (t.stopped_cleanly) w.chunk(gdtrace::ChunkType::End, words(static_cast<std::uint64_t>(t.event_count())));
  if (!w.ok()) throw TraceError(path + ": write failed: " + std::strerror(errno));
}

}  // namespace gpudiag
