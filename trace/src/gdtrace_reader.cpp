// Reads a .gdtrace file into a Trace. A file cut short (the traced process was
// killed mid-write) loads up to its last whole chunk and is marked truncated;
// a corrupt chunk inside the file stops reading there and is reported as
// damage, not as the end of the recording; a file without the End chunk of a
// clean stop is marked as such; a file that is not a .gdtrace at all is a
// TraceError.

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <deque>

#include "chunk_payloads.h"
#include "event_codec.h"
#include "file_view.h"
#include "gdtrace_format.h"
#include "gdtrace_index.h"
#include "gpudiag/trace_io.h"
#include "identity_payload.h"

namespace gpudiag {
namespace {

using gdtrace::ChunkHeader;
using gdtrace::ChunkType;
using gdtrace::RawEvent;
using gdtrace::load;

JobPlace job_of(const gdtrace::IdentityPayload& id) {
  JobPlace job;
  job.rank = id.rank;
  job.world_size = id.world_size;
  job.local_rank = id.local_rank;
  job.launcher = id.launcher;
  job.host = id.host;
  job.backend = id.backend;
  job.epoch_offset_known = (id.flags & gdtrace::kEpochOffsetKnown) != 0;
  job.epoch_offset_ns = job.epoch_offset_known ? id.epoch_offset_ns : 0;
  job.epoch_offset_uncertainty_ns = job.epoch_offset_known ? id.epoch_offset_uncertainty_ns : 0;
  return job;
}

// An events chunk is converted once every String and Stack chunk is read
// (a thread's events may reach the file before the names they refer to).
using gdtrace::EventRecords;

// Reads a whole trace into memory, or, given an index to fill, only its
// definitions and where its events lie (a trace read in passes).
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name) : name_(name) { file_ = &files_.emplace_back(bytes); }
  Reader(const std::string& path, gdtrace::GdtraceIndex& index) : name_(path), index_(&index) {
    file_ = &files_.emplace_back(FileView::Piecewise{}, path);
    index.files.push_back(path);
  }

  Trace read() {
    read_header();
    std::size_t pos = header_size_;
    while (pos < file_->size()) {
      if (!read_chunk(pos)) break;
    }
    read_segments();
    convert_events();
    trace_.join_syncs_with_their_calls();
    trace_.sort_by_time();
    if (trace_.truncated || !trace_.stopped_cleanly) trace_.complete_until_ns = evidence_horizon();
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw TraceError(name_ + ": " + why); }

  // Why the file being read is not a .gdtrace this reader reads ("" when it is one).
  std::string header_problem() const {
    if (file_->size() < 8 || std::memcmp(file_->at(0, 8), gdtrace::kMagic, 8) != 0)
      return "not a .gdtrace file (no GDTRACE magic at the start)";
    if (file_->size() < sizeof(gdtrace::FileHeader))
      return "the .gdtrace header is cut short (" + std::to_string(file_->size()) + " bytes)";
    const auto h = header();
    if (h.version == 0 || h.version > gdtrace::kVersion)
      return ".gdtrace version " + std::to_string(h.version) + " is not supported (this gpudiag reads up to version " +
             std::to_string(gdtrace::kVersion) + ")";
    if (h.header_size < sizeof h || h.header_size > file_->size()) return "the .gdtrace header size is invalid";
    return {};
  }

  gdtrace::FileHeader header() const { return load<gdtrace::FileHeader>(file_->at(0, sizeof(gdtrace::FileHeader))); }

  void read_header() {
    if (const std::string why = header_problem(); !why.empty()) fail(why);
    const auto h = header();
    header_size_ = h.header_size;
    trace_.source = TraceSource::Gdtrace;
    trace_.path = name_;
    trace_.format_version = h.version;
    trace_.pid = static_cast<std::int64_t>(h.pid);
    trace_.stopped_cleanly = false;  // until the End chunk is read
  }

  // Reading stopped because the file ends: the process died mid-write.
  void stop_at_end(std::size_t pos, const std::string& why) {
    trace_.truncated = true;
    trace_.truncation_note = why + " at byte " + std::to_string(pos) + "; read the " + std::to_string(chunks_) +
                             " whole chunks before it";
  }

  // Reading stopped at a corrupt chunk. `next` is where the chunk would end
  // (0 when its header is corrupt, so its extent is unknown); what follows
  // was ignored, and is counted so nobody mistakes damage for the end.
  void stop_at_corruption(std::size_t pos, std::size_t next, const std::string& why) {
    trace_.truncated = true;
    trace_.corrupt_chunk = true;
    std::string ignored;
    if (next == 0)
      ignored = "the " + std::to_string(file_->size() - pos) + " bytes from it to the end of the file were ignored";
    else if (next < file_->size())
      ignored = "the " + std::to_string(file_->size() - next) + " bytes after it were ignored";
    else
      ignored = "it is the last chunk in the file";
    trace_.truncation_note = "corrupt chunk at byte " + std::to_string(pos) + " (" + why + "); " + ignored +
                             "; read the " + std::to_string(chunks_) + " whole chunks before it";
    // A clean stop writes End last: a damaged file may still end with it.
    trace_.stopped_cleanly = ends_with_end_chunk(next == 0 ? pos : next);
  }

  // True when the file's last chunk, starting at or after `from`, is a valid End chunk.
  bool ends_with_end_chunk(std::size_t from) const {
    constexpr std::size_t kEndChunk = sizeof(ChunkHeader) + sizeof(std::uint64_t);
    if (file_->size() < from + kEndChunk) return false;
    const char* p = file_->at(file_->size() - kEndChunk, kEndChunk);
    const auto h = load<ChunkHeader>(p);
    return h.tag == gdtrace::kChunkTag && h.type == static_cast<std::uint16_t>(ChunkType::End) &&
           h.length == sizeof(std::uint64_t) && gdtrace::checksum(p + sizeof h, h.length) == h.crc;
  }

  bool read_chunk(std::size_t& pos) {
    const std::size_t left = file_->size() - pos;
    if (left < sizeof(ChunkHeader)) {
      stop_at_end(pos, "file ends inside a chunk header");
      return false;
    }
    const auto h = load<ChunkHeader>(file_->at(pos, sizeof(ChunkHeader)));
    if (h.tag != gdtrace::kChunkTag || h.length > gdtrace::kMaxChunk) {
      stop_at_corruption(pos, 0, h.tag != gdtrace::kChunkTag ? "bad chunk tag" : "chunk length over the 64 MiB limit");
      return false;
    }
    if (h.length > left - sizeof h) {
      // A damaged length field looks the same, unless a clean stop's End chunk follows.
      if (ends_with_end_chunk(pos + sizeof h))
        stop_at_corruption(pos, 0, "chunk length runs past the end of the file");
      else
        stop_at_end(pos, "file ends inside a chunk");
      return false;
    }
    const char* payload = file_->at(pos + sizeof h, h.length);
    const std::size_t next = pos + sizeof h + h.length;
    chunk_ = {pos + sizeof h, h.crc};
    if (gdtrace::checksum(payload, h.length) != h.crc) {
      stop_at_corruption(pos, next, "checksum mismatch");
      return false;
    }
    if (!apply(static_cast<ChunkType>(h.type), payload, h.length)) {
      stop_at_corruption(pos, next, "malformed payload for chunk type " + std::to_string(h.type));
      return false;
    }
    // A crash handler's End may be followed by more of the recording (the
    // program's own handler let it go on): only an End written last counts.
    // A writer's Drained marker may still follow it: it adds no events.
    if (h.type != static_cast<std::uint16_t>(ChunkType::End) && h.type != static_cast<std::uint16_t>(ChunkType::Drained))
      trace_.stopped_cleanly = false;
    ++chunks_;
    pos = next;
    return true;
  }

  bool apply(ChunkType type, const char* p, std::uint32_t n) {
    switch (type) {
      case ChunkType::Events:
      case ChunkType::DeflatedEvents: return take_events(type, p, n);
      case ChunkType::String:
        if (n < 4) return false;
        ids_.strings[load<std::uint32_t>(p)] = trace_.intern(std::string_view(p + 4, n - 4));
        return true;
      case ChunkType::Stack: {
        if (n < 8) return false;
        const auto id = load<std::uint32_t>(p);
        const auto count = load<std::uint32_t>(p + 4);
        if (std::uint64_t{count} * 8 + 8 != n) return false;
        Stack s;
        for (std::uint32_t i = 0; i < count; ++i) s.frames.push_back({.ip = load<std::uint64_t>(p + 8 + std::size_t{i} * 8)});
        ids_.stacks[id] = trace_.add_stack(std::move(s));
        return true;
      }
      case ChunkType::Module:
        if (n < 24) return false;
        trace_.modules.push_back({.path = trace_.intern(std::string_view(p + 24, n - 24)),
                                  .base = load<std::uint64_t>(p),
                                  .size = load<std::uint64_t>(p + 16),
                                  .low = load<std::uint64_t>(p + 8)});
        return true;
      case ChunkType::Dropped:
        if (n != 8) return false;
        trace_.dropped_events = std::max(trace_.dropped_events, load<std::uint64_t>(p));
        return true;
      case ChunkType::Process: {
        if (n < 16) return false;
        trace_.pid = load<std::int64_t>(p);
        std::string cmd(p + 16, n - 16);
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        trace_.command = std::move(cmd);
        return true;
      }
      case ChunkType::Identity: {
        gdtrace::IdentityPayload id;
        if (!gdtrace::decode_identity(p, n, id)) return false;
        take_identity(id);
        return true;
      }
      case ChunkType::Exit: {
        if (n < 4) return false;
        // Only a status a process can exit with; anything else is not said.
        if (const auto status = load<std::int32_t>(p); status >= 0 && status <= 255) trace_.exit_status = status;
        return true;
      }
      case ChunkType::End:
        if (n != 8) return false;
        trace_.stopped_cleanly = true;
        return true;
      case ChunkType::Drained:
        if (n != 8) return false;
        drained_ns_ = std::max(drained_ns_, load<std::uint64_t>(p));
        return true;
      case ChunkType::Segment: {
        if (n <= 4) return false;
        const std::string name(p + 4, n - 4);
        // Only a file beside the keep file: a name cannot lead elsewhere.
        if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
          return false;
        segments_.push_back({load<std::uint32_t>(p), name, drained_ns_});
        return true;
      }
      case ChunkType::SegmentDropped:
        if (n != 16) return false;
        dropped_segments_[load<std::uint32_t>(p)] = load<std::uint64_t>(p + 8);
        return true;
      case ChunkType::Retained: {
        std::vector<char> inflated;
        EventRecords records;
        std::uint32_t seq = 0;
        if (!gdtrace::read_retained_records(p, n, inflater_, inflated, seq, records)) return false;
        // Read piece by piece, the file's bytes do not stay: a copy.
        if (records.data == p + 8 && !file_->whole()) inflated.assign(p + 8, p + n), records.data = inflated.data();
        retained_.push_back({seq, records});
        if (!inflated.empty()) inflated_.push_back(std::move(inflated));
        return true;
      }
      case ChunkType::Crash: {
        gdtrace::CrashPayload c;
        if (!gdtrace::read_crash(p, n, c)) return false;
        trace_.crashes.push_back({.time_ns = c.time_ns,
                                  .signal = c.signal,
                                  .code = c.code,
                                  .address = c.address,
                                  .tid = c.tid,
                                  .stack = add_fault_stack(c)});
        return true;
      }
      case ChunkType::GuardedAccess: {
        gdtrace::GuardedAccessPayload g;
        if (!gdtrace::read_guarded_access(p, n, g)) return false;
        trace_.host_accesses.push_back({.time_ns = g.time_ns,
                                        .addr = g.address,
                                        .access = g.write() ? AccessKind::Write : AccessKind::Read,
                                        .tid = g.tid,
                                        .stack = add_fault_stack(g),
                                        .guarded_copy = g.guarded_copy});
        return true;
      }
    }
    return true;  // a chunk type from a newer minor revision: skip it
  }

  void take_identity(const gdtrace::IdentityPayload& id) {
    if (id.pid != 0) trace_.pid = id.pid;
    trace_.job = job_of(id);
  }

  // The stack of a crash or a guarded access, as it was unwound from the fault.
  StackId add_fault_stack(const gdtrace::FaultFrames& f) {
    if (f.frames.empty()) return kNoStack;
    Stack s;
    s.starts_at_fault = (f.flags & gdtrace::kCrashStartsAtFault) != 0;
    for (const std::uint64_t ip : f.frames) s.frames.push_back({.ip = ip});
    return trace_.add_stack(std::move(s));
  }

  bool take_events(ChunkType type, const char* p, std::uint32_t n) {
    std::vector<char> inflated;
    EventRecords records;
    if (!gdtrace::read_event_records(type, p, n, inflater_, inflated, records)) return false;
    if (index_ != nullptr) {
      index_events(type, n, records);
      return true;
    }
    spans_.push_back(records);
    // Read whole, a plain chunk's events stay in the file's bytes; inflated
    // ones stay where they are when their vector moves.
    if (!inflated.empty()) inflated_.push_back(std::move(inflated));
    return true;
  }

  // Where the chunk being read lies, for the index.
  struct ChunkAt {
    std::size_t payload_at = 0;
    std::uint32_t crc = 0;
  };

  // An events chunk of a trace read in passes: its span of time and count,
  // and its descriptions, which every pass needs.
  void index_events(ChunkType type, std::uint32_t length, const EventRecords& records) {
    gdtrace::EventsChunk c{.file = static_cast<std::uint32_t>(index_->files.size() - 1),
                           .payload_at = chunk_.payload_at,
                           .length = length,
                           .crc = chunk_.crc,
                           .type = type,
                           .first_ns = ~std::uint64_t{0}};
    for (std::size_t i = 0; i < records.count; ++i) {
      const RawEvent e = records[i];
      if (gdtrace::is_description(e)) {
        descriptions_.push_back(e);
        continue;
      }
      note_gpu_activity(e);
      ++c.count;
      ++index_->events_of_kind[e.kind];
      c.first_ns = std::min(c.first_ns, e.t0);
      c.last_ns = std::max(c.last_ns, e.t0);
    }
    index_->events += c.count;
    if (c.count > 0) index_->chunks.push_back(c);
  }

  // The latest end of GPU activity, which CUPTI delivers late (evidence_horizon).
  void note_gpu_activity(const RawEvent& e) {
    const auto kind = static_cast<EventKind>(e.kind);
    if ((kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset) && e.device != kHostDevice)
      gpu_ = true, gpu_last_ = std::max(gpu_last_, e.t1);
  }

  // Before when a file without its end holds every thread's events: the
  // writer's last Drained marker says so. Without one (a file from before
  // the markers, or cut before the first pass) nothing is known to be
  // whole: a thread whose first chunk is missing may have recorded at any
  // time. GPU activity that CUPTI delivers late, in batches, is whole only
  // up to the end of the last such record read.
  std::uint64_t evidence_horizon() const {
    std::uint64_t horizon = drained_ns_;
    if (gpu_) horizon = std::min(horizon, gpu_last_);
    return horizon;
  }

  void read_segments();
  void convert_events();
  void attach_modules();

  // The files read: the trace file, then its segments (a deque: file_ and
  // the spans point into them).
  std::deque<FileView> files_;
  FileView* file_ = nullptr;  // the one being read
  std::string name_;
  gdtrace::GdtraceIndex* index_ = nullptr;  // set when only indexing
  ChunkAt chunk_;
  std::vector<RawEvent> descriptions_;  // devices and streams met while indexing
  bool gpu_ = false;
  std::uint64_t gpu_last_ = 0;
  std::size_t header_size_ = 0;
  std::size_t chunks_ = 0;
  Trace trace_;
  std::vector<EventRecords> spans_;
  std::vector<std::vector<char>> inflated_;
  gdtrace::Inflater inflater_;
  std::uint64_t drained_ns_ = 0;  // the latest Drained marker's time; 0 before the first
  struct SegmentName {
    std::uint32_t seq;
    std::string name;
    std::uint64_t drained_ns;  // the keep file's latest Drained marker when it named the segment
  };
  std::vector<SegmentName> segments_;                    // in the order the keep file names them
  std::map<std::uint32_t, std::uint64_t> dropped_segments_;  // seq -> its latest event time
  std::vector<std::pair<std::uint32_t, EventRecords>> retained_;  // by the seq they were kept from
  gdtrace::FileIds ids_;
};

void Reader::attach_modules() {
  for (auto& s : trace_.stacks)
    for (auto& f : s.frames)
      for (std::size_t m = 0; m < trace_.modules.size(); ++m) {
        const auto& mod = trace_.modules[m];
        if (f.ip >= mod.low && f.ip < mod.low + mod.size) {
          f.module = static_cast<std::int32_t>(m);
          break;
        }
      }
}

// The segment files the keep file names and has not dropped, in order, and
// what it kept of those it dropped (or of one it could not remove).
void Reader::read_segments() {
  const std::filesystem::path dir = std::filesystem::path(name_).parent_path();
  FileView* const keep = file_;
  const std::size_t keep_header = header_size_;
  const auto keep_header_fields = header();
  const bool stopped_cleanly = trace_.stopped_cleanly;
  std::set<std::uint32_t> read;
  std::set<std::pair<std::uint64_t, std::uint64_t>> files_read;  // (device, inode)
  // Events of a segment not read (missing, cut, damaged, or after damage in
  // the keep file) may be older than the keep file's later Drained markers:
  // the trace is whole only up to the marker before that segment was named.
  const auto lost_from = [&](const SegmentName& segment, const std::string& why) {
    trace_.truncated = true;
    trace_.corrupt_chunk = true;
    if (!why.empty()) trace_.truncation_note = why;
    drained_ns_ = std::min(drained_ns_, segment.drained_ns);
  };
  // A copy: a segment is no place for Segment chunks, and one there is not followed.
  const std::vector<SegmentName> named = segments_;
  for (const SegmentName& segment : named) {
    if (dropped_segments_.contains(segment.seq) || read.contains(segment.seq)) continue;
    if (trace_.corrupt_chunk) {
      lost_from(segment, {});
      break;
    }
    const std::string path = (dir / segment.name).string();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      // Removed without a SegmentDropped chunk: the process died between the
      // two, and then what it kept of it is in a Retained chunk.
      if (std::any_of(retained_.begin(), retained_.end(), [&](const auto& r) { return r.first == segment.seq; })) continue;
      lost_from(segment, "the segment file " + segment.name + " is missing: its events are lost");
      break;
    }
    struct stat keep_st {};
    if (::stat(name_.c_str(), &keep_st) == 0 && keep_st.st_dev == st.st_dev && keep_st.st_ino == st.st_ino) {
      lost_from(segment, "the segment file " + segment.name + " is the trace file itself");
      break;
    }
    if (!files_read.insert({st.st_dev, st.st_ino}).second) {
      lost_from(segment, "the segment file " + segment.name + " is named twice");
      break;
    }
    try {
      if (index_ != nullptr) file_ = &files_.emplace_back(FileView::Piecewise{}, path);
      else file_ = &files_.emplace_back(read_file(path));
    } catch (const TraceError&) {  // removed since: as if missing
      file_ = keep;
      lost_from(segment, "the segment file " + segment.name + " could not be read: its events are lost");
      break;
    }
    if (index_ != nullptr) index_->files.push_back(path);
    std::string why = header_problem();
    if (why.empty()) {
      const auto h = header();
      // A file of another run that reused the pid and the name.
      if (h.pid != keep_header_fields.pid || h.start_ns != keep_header_fields.start_ns) why = "of another recording";
    }
    if (!why.empty()) {
      lost_from(segment, "the segment file " + segment.name + " is " + why);
      break;
    }
    read.insert(segment.seq);
    std::size_t pos = header().header_size;
    bool whole = true;
    while (pos < file_->size() && (whole = read_chunk(pos))) {
    }
    if (!whole) {
      lost_from(segment, "segment file " + segment.name + ": " + trace_.truncation_note);
      break;
    }
  }
  file_ = keep;
  header_size_ = keep_header;
  // Whether the process stopped cleanly is the keep file's to say (its End chunk).
  trace_.stopped_cleanly = stopped_cleanly;
  // What was kept of the segments not read. (A drop is not retried after a
  // failure, which stops the recording, so no segment is kept twice.)
  for (const auto& [seq, span] : retained_)
    if (!read.contains(seq)) spans_.push_back(span);
  for (const auto& [seq, latest] : dropped_segments_) trace_.detail_from_ns = std::max(trace_.detail_from_ns, latest + 1);
}

// Once every String and Stack chunk is read. Indexing, only the
// descriptions; the events stay in the files, and what a bounded trace
// kept of its dropped segments goes to the index.
void Reader::convert_events() {
  attach_modules();
  for (const RawEvent& e : descriptions_) gdtrace::add_event(trace_, ids_, e);
  for (const EventRecords& records : spans_)
    for (std::size_t i = 0; i < records.count; ++i) {
      const RawEvent e = records[i];
      note_gpu_activity(e);
      if (index_ == nullptr || gdtrace::is_description(e)) {
        gdtrace::add_event(trace_, ids_, e);
        continue;
      }
      ++index_->events;
      ++index_->events_of_kind[e.kind];
      index_->retained.push_back(e);
    }
  if (index_ != nullptr) index_->ids = ids_;
}

}  // namespace

namespace gdtrace {

GdtraceIndex index_gdtrace(const std::string& path) {
  GdtraceIndex index;
  index.definitions = Reader(path, index).read();
  return index;
}

}  // namespace gdtrace

Trace read_gdtrace_bytes(std::string_view bytes, const std::string& name) { return Reader(bytes, name).read(); }

Trace read_gdtrace(const std::string& path) { return read_gdtrace_bytes(read_file(path), path); }

JobPlace read_gdtrace_job(const std::string& path, std::int64_t* pid) {
  FileView file(FileView::Piecewise{}, path);
  if (file.size() < sizeof(gdtrace::FileHeader) || std::memcmp(file.at(0, 8), gdtrace::kMagic, 8) != 0)
    throw TraceError(path + ": not a .gdtrace file (no GDTRACE magic at the start)");
  const auto header = load<gdtrace::FileHeader>(file.at(0, sizeof(gdtrace::FileHeader)));
  if (header.version == 0 || header.version > gdtrace::kVersion)
    throw TraceError(path + ": .gdtrace version " + std::to_string(header.version) + " is not supported");
  std::size_t pos = std::max<std::size_t>(header.header_size, sizeof header);
  while (pos <= file.size() && file.size() - pos >= sizeof(ChunkHeader)) {
    const auto h = load<ChunkHeader>(file.at(pos, sizeof(ChunkHeader)));
    if (h.tag != gdtrace::kChunkTag || h.length > file.size() - pos - sizeof h) break;
    if (h.type == static_cast<std::uint16_t>(ChunkType::Identity)) {
      const char* payload = file.at(pos + sizeof h, h.length);
      gdtrace::IdentityPayload id;
      if (gdtrace::checksum(payload, h.length) != h.crc || !gdtrace::decode_identity(payload, h.length, id)) break;
      if (pid != nullptr) *pid = id.pid != 0 ? id.pid : static_cast<std::int64_t>(header.pid);
      return job_of(id);
    }
    pos += sizeof h + h.length;
  }
  if (pid != nullptr) *pid = static_cast<std::int64_t>(header.pid);
  return {};
}

}  // namespace gpudiag
