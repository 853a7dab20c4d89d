#include "segment_ring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <new>
#include <optional>

#include "chunk_payloads.h"
#include "chunk_writing.h"
#include "gpudiag/descriptors.h"

namespace gpudiag::gdtrace {
namespace {

// One write(2) per chunk, as every writer of a .gdtrace does (O_APPEND keeps
// chunks of concurrent writers whole).
bool append_chunk(int fd, ChunkType type, std::string_view head, std::string_view body = {}) {
  const std::string chunk = chunk_bytes(type, head, body);
  return write_all(fd, chunk.data(), chunk.size());
}

std::string read_whole(const std::string& path) {
  std::string bytes;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n == 0) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.remove_suffix(1);
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.remove_suffix(1);
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit.size() == 1 && (unit[0] == 'k' || unit[0] == 'K'))
    shift = 10;
  else if (unit.size() == 1 && (unit[0] == 'm' || unit[0] == 'M'))
    shift = 20;
  else if (unit.size() == 1 && (unit[0] == 'g' || unit[0] == 'G'))
    shift = 30;
  else if (unit.size() == 1 && (unit[0] == 't' || unit[0] == 'T'))
    shift = 40;
  else
    return std::nullopt;
  if (shift != 0 && n > (~std::uint64_t{0} >> shift)) return std::nullopt;
  return n << shift;
}

std::vector<RawEvent> events_of_file(std::string_view bytes) {
  std::vector<RawEvent> events;
  if (bytes.size() < sizeof(FileHeader)) return events;
  std::size_t pos = load<FileHeader>(bytes.data()).header_size;
  Inflater inflater;
  std::vector<char> inflated;
  while (pos + sizeof(ChunkHeader) <= bytes.size()) {
    const auto h = load<ChunkHeader>(bytes.data() + pos);
    if (h.tag != kChunkTag || h.length > kMaxChunk || h.length > bytes.size() - pos - sizeof h) break;
    const char* p = bytes.data() + pos + sizeof h;
    if (checksum(p, h.length) != h.crc) break;
    pos += sizeof h + h.length;
    const auto type = static_cast<ChunkType>(h.type);
    if (type != ChunkType::Events && type != ChunkType::DeflatedEvents) continue;
    EventRecords records;
    if (!read_event_records(type, p, h.length, inflater, inflated, records)) break;
    for (std::size_t i = 0; i < records.count; ++i) events.push_back(records[i]);
  }
  return events;
}

SegmentRing::SegmentRing(int keep_fd, std::string keep_path, const FileHeader& header, std::uint64_t max_bytes)
    : keep_fd_(keep_fd),
      keep_path_(std::move(keep_path)),
      header_(header),
      max_bytes_(max_bytes),
      segment_bytes_(std::clamp<std::uint64_t>(max_bytes / 8, 1, kMaxSegmentBytes)),
      events_fd_(keep_fd) {
  header_fd_ = open_above_stdio(keep_path_.c_str(), O_WRONLY);
  prepare_next();
}

SegmentRing::~SegmentRing() { close_files(); }

std::uint64_t SegmentRing::size_of(int fd) const {
  if (fd < 0) return 0;
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

bool SegmentRing::prepare_next() {
  const std::uint32_t seq = next_seq_;
  const std::string path = keep_path_ + "." + std::to_string(seq);
  const int fd = open_above_stdio(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) return false;
  FileHeader h = header_;
  h.version = kVersion;
  if (!write_all(fd, &h, sizeof h)) {
    ::close(fd);
    ::unlink(path.c_str());
    return false;
  }
  ++next_seq_;
  next_ = {seq, path, fd};
  next_chunk_ = chunk_bytes(ChunkType::Segment, words(seq), path.substr(path.rfind('/') + 1));
  next_fd_.store(fd, std::memory_order_release);
  return true;
}

void SegmentRing::took_events() noexcept {
  const int current = events_fd_.load(std::memory_order_acquire);
  if (current < 0 || size_of(current) < (current == keep_fd_ ? max_bytes_ / 4 : segment_bytes_)) return;
  int next = next_fd_.load(std::memory_order_acquire);
  if (next < 0 || !next_fd_.compare_exchange_strong(next, -1)) return;  // none ready, or another thread took it
  // From the first segment on, a version-2 reader would miss events: it must refuse the file.
  const std::uint32_t version = kVersion;
  if ((current == keep_fd_ && ::pwrite(header_fd_, &version, sizeof version, offsetof(FileHeader, version)) !=
                                  static_cast<ssize_t>(sizeof version)) ||
      !write_all(keep_fd_, next_chunk_.data(), next_chunk_.size())) {
    switch_failed_.store(true, std::memory_order_release);  // events stay where they are; maintain() stops
    return;
  }
  events_fd_.store(next, std::memory_order_release);
}

void SegmentRing::remove_unused_next() noexcept {
  int next = next_fd_.load(std::memory_order_acquire);
  if (next >= 0 && next_fd_.compare_exchange_strong(next, -1)) {
    ::unlink(next_.path.c_str());
    ::close(next);
  }
}

void SegmentRing::close_files() {
  std::lock_guard<std::mutex> dropping(drop_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  remove_unused_next();
  // Taken by a thread but not yet seen by maintain(): not in segments_.
  if (next_.fd >= 0 && events_fd_.load() == next_.fd) ::close(next_.fd);
  next_.fd = -1;
  events_fd_.store(-1, std::memory_order_release);
  if (header_fd_ >= 0) ::close(header_fd_);
  header_fd_ = -1;
  for (const Segment& s : segments_) ::close(s.fd);
  for (int fd : retired_fds_) ::close(fd);
  retired_fds_.clear();
  for (Segment& s : segments_) s.fd = -1;
}

void SegmentRing::close_files_after_fork() noexcept {
  events_fd_.store(-1, std::memory_order_release);
  const int next = next_fd_.exchange(-1);
  if (next >= 0) ::close(next);  // the parent's to use or remove
  if (next_.fd >= 0 && next_.fd != next) {
    bool listed = false;
    for (const Segment& s : segments_) listed |= s.fd == next_.fd;
    if (!listed) ::close(next_.fd);
  }
  next_.fd = -1;
  if (header_fd_ >= 0) ::close(header_fd_);
  header_fd_ = -1;
  for (Segment& s : segments_) {
    ::close(s.fd);
    s.fd = -1;
  }
  for (int& fd : retired_fds_) {
    ::close(fd);
    fd = -1;
  }
}

std::uint32_t SegmentRing::in_use_seq() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int fd = events_fd_.load();
  if (next_.fd >= 0 && fd == next_.fd) return next_.seq;
  for (auto s = segments_.rbegin(); s != segments_.rend(); ++s)
    if (s->fd == fd) return s->seq;
  return 0;
}

bool SegmentRing::maintain(bool may_drop, bool stopping, std::uint32_t in_use_from) {
  std::lock_guard<std::mutex> dropping(drop_mutex_);
  // Segments from this one on stay: the newest, and the one events went to
  // when the caller found no write in flight (`may_drop`, `in_use_from`):
  // threads make new segments ready meanwhile, and a write that began
  // since may still be writing to it.
  std::optional<std::uint32_t> keep_from_seq;
  for (;;) {
    Segment oldest;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (events_fd_.load() < 0) return true;
      // The current file may be full and no writer has looked since; at the
      // stop no event comes, and a new segment would stay empty.
      if (!stopping) took_events();
      if (!adopt_taken_next()) return false;
      if (!may_drop) return true;
      if (!keep_from_seq) {
        // The newest two stay: a thread that read events_fd() before the
        // last rotation may still be writing to the one before. At the
        // stop, the newest that holds events: the write that filled a
        // segment moved events on to the next at once, which may have got
        // none since.
        std::size_t keep_newest = 2;
        if (stopping && !segments_.empty() && size_of(segments_.back().fd) > sizeof(FileHeader)) keep_newest = 1;
        if (segments_.size() <= keep_newest) return true;
        keep_from_seq = std::min(segments_[segments_.size() - keep_newest].seq, in_use_from);
      }
      std::uint64_t total = size_of(keep_fd_);
      for (std::size_t i = 0; i < segments_.size(); ++i) {
        Segment& s = segments_[i];
        if (i + 2 < segments_.size()) {
          if (s.bytes == 0) s.bytes = size_of(s.fd);
          total += s.bytes;
        } else {
          total += size_of(s.fd);
        }
      }
      if (total <= max_bytes_ || segments_.front().seq >= *keep_from_seq) return true;
      oldest = segments_.front();
    }
    // Read back and kept from outside the ring's lock: meanwhile threads
    // go on switching to new segments, each at its share.
    if (!drop(oldest)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    segments_.pop_front();
    retired_fds_.push_back(oldest.fd);
  }
}

bool SegmentRing::adopt_taken_next() {
  if (next_fd_.load() >= 0) return true;
  if (next_.fd < 0 || switch_failed_.load(std::memory_order_acquire)) return false;  // none could be made ready
  if (events_fd_.load() != next_.fd) return true;  // a thread took it and is switching to it: adopted next time
  // A thread switched to the one made ready: it is a segment now, and the
  // previous one's descriptor is closed two rotations later.
  segments_.push_back(next_);
  next_.fd = -1;
  if (retired_fds_.size() > 2) {
    const std::size_t closing = retired_fds_.size() - 2;
    for (std::size_t i = 0; i < closing; ++i) ::close(retired_fds_[i]);
    retired_fds_.erase(retired_fds_.begin(), retired_fds_.begin() + static_cast<std::ptrdiff_t>(closing));
  }
  return prepare_next();
}

void SegmentRing::make_next_ready() noexcept {
  if (next_fd_.load(std::memory_order_acquire) >= 0) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || events_fd_.load() < 0) return;
  try {
    adopt_taken_next();  // a failure leaves the ring stuck, for maintain() to find and report
  } catch (const std::bad_alloc&) {
  }
}

bool SegmentRing::drop(const Segment& s) {
  std::vector<RawEvent> events = events_of_file(read_whole(s.path));
  std::uint64_t latest = 0;
  for (const RawEvent& e : events) latest = std::max(latest, e.t0);
  std::stable_sort(events.begin(), events.end(), [](const RawEvent& a, const RawEvent& b) { return a.t0 < b.t0; });
  const std::vector<RawEvent> kept = retainer_.keep_from(events);
  // Deflated as event chunks are: a leak's allocations, kept for the whole
  // run, differ in little but their addresses and times.
  constexpr std::size_t kPerChunk = 8192;
  Deflater deflater(kPerChunk);
  for (std::size_t i = 0; i < kept.size(); i += kPerChunk) {
    const std::size_t n = std::min(kPerChunk, kept.size() - i);
    std::string_view body(reinterpret_cast<const char*>(kept.data() + i), n * sizeof(RawEvent));
    if (const std::size_t deflated = deflater.compress(body.data(), body.size()); deflated != 0)
      body = std::string_view(deflater.out(), deflated);
    if (!append_chunk(keep_fd_, ChunkType::Retained, words(s.seq, static_cast<std::uint32_t>(n)), body)) return false;
  }
  if (!append_chunk(keep_fd_, ChunkType::SegmentDropped, words(s.seq, std::uint32_t{0}, latest))) return false;
  ::unlink(s.path.c_str());
  return true;
}

}  // namespace gpudiag::gdtrace
