// A trace of bounded size (gpudiag trace --max-size): the file the recording
// started (the keep file) takes its first events and, for the whole run,
// every definition (strings, stacks, modules), crash and guarded access.
// Once it holds a quarter of the bound, events go to a ring of segment
// files beside it, `<keep file>.<seq>` (an eighth of the bound each, at most
// kMaxSegmentBytes), each a .gdtrace header and event chunks; the keep file
// names each one in a Segment chunk. When the keep file and the segments
// together pass the bound, the oldest segment is
// read back, what the Retainer keeps of it is written to the keep file
// (a Retained chunk), a SegmentDropped chunk says up to when its detail
// went, and the file is removed. FORMAT.md describes the chunks.
//
// maintain() runs one call at a time (the recorder's writer thread, flush(),
// stop), and reads a segment back outside the lock that guards the list of
// segments; any thread may write event chunks to events_fd() and then,
// through took_events(), move events on to the segment made ready, and
// through make_next_ready(), make the next one ready. A segment's
// descriptor stays open for two more rotations, so a write that read the old
// descriptor lands in the file it meant, never in a reused descriptor; the
// oldest is dropped only when no write is in flight.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gdtrace_format.h"
#include "retainer.h"

namespace gpudiag::gdtrace {

// "64M", "2G", "500k", "1048576": bytes (binary multiples); nullopt for
// anything else, or for 0.
std::optional<std::uint64_t> parse_size(std::string_view text);

// Event records of a file's Events and DeflatedEvents chunks, each with
// its thread in `tid`, in file order, up to the first chunk that is not
// whole (a segment may be cut short by a killed process).
std::vector<RawEvent> events_of_file(std::string_view bytes);

class SegmentRing {
 public:
  // The largest segment: dropping one reads it back and inflates its events
  // in the traced process (about 6 times its size), on the writer thread.
  static constexpr std::uint64_t kMaxSegmentBytes = 8 << 20;
  // The smallest bound `gpudiag trace --max-size` and GPUDIAG_TRACE_MAX_SIZE
  // take: below it the keep file's definitions (strings, stacks, modules)
  // are most of the bound, and the newest detail holds too few iterations
  // of a training loop for the report to find it. The ring itself takes any.
  static constexpr std::uint64_t kMinBytes = 1 << 20;

  SegmentRing(int keep_fd, std::string keep_path, const FileHeader& header, std::uint64_t max_bytes);
  ~SegmentRing();
  SegmentRing(const SegmentRing&) = delete;
  SegmentRing& operator=(const SegmentRing&) = delete;

  // Where event chunks go now.
  int events_fd() const noexcept { return events_fd_.load(std::memory_order_acquire); }
  // Called after event chunks were written (by any thread, a crash handler
  // included: async-signal-safe): when the file events go to is full (the
  // keep file at a quarter of the bound, a segment at its share), events go
  // on in the next segment, made ready beforehand, at once rather than at
  // the next maintain(): a busy program could otherwise fill one file far
  // past its share while the writer thread waits for a core.
  void took_events() noexcept;
  // The most events a chunk written to the ring holds: a quarter of a
  // segment's share uncompressed, so that a file passes its share by little
  // even when a whole buffer is written at once.
  std::uint32_t events_per_chunk() const noexcept {
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(segment_bytes_ / 4 / sizeof(RawEvent), 1));
  }
  // Makes the next segment ready once a thread took the one made ready, so
  // that a long run of writes between two maintain() calls (a writer thread
  // that waited for a core, then writes everything at once; an owner
  // writing its own buffers meanwhile) goes on at each segment's share
  // rather than filling one file far past the bound, which would then stay
  // as the newest segment. Not async-signal-safe; when maintain() holds the
  // ring, it returns at once.
  void make_next_ready() noexcept;
  // Starts a new segment when the current one is full, and drops the oldest
  // while the files are over the bound. Returns false when a file could
  // not be created or written (the disk is full): the caller stops
  // recording. `may_drop`: no write that read events_fd() before the last
  // rotation is still in flight, so the oldest segment is whole (a write
  // landing in a segment after it was read would be lost); when false,
  // dropping waits for a later call.
  // `stopping`: nothing writes any more, so only the newest segment need stay.
  // `in_use_from`: segments from this seq on stay, whatever the bound: the
  // caller read it (in_use_seq()) before it found no write in flight, so a
  // write that began since may be writing to it.
  bool maintain(bool may_drop = true, bool stopping = false, std::uint32_t in_use_from = UINT32_MAX);
  // The seq of the segment events go to now; 0 for the keep file.
  std::uint32_t in_use_seq();
  std::uint64_t max_bytes() const { return max_bytes_; }
  // Closes the segment files (the recording stopped); events_fd() is -1 after.
  // The segment made ready and never used is removed.
  void close_files();
  // The recording stops without closing its files (at exit, other threads
  // may still be writing): the segment made ready and never used is
  // removed, and events stay where they go now.
  void remove_unused_next() noexcept;
  // The same in a forked child, where the mutex may be held by a thread
  // that does not exist there.
  void close_files_after_fork() noexcept;

 private:
  struct Segment {
    std::uint32_t seq;
    std::string path;
    int fd;
    std::uint64_t bytes = 0;  // once two newer segments exist (no more writes come): its size
  };
  bool prepare_next();
  bool adopt_taken_next();  // under mutex_
  bool drop(const Segment& oldest);  // under drop_mutex_ only
  std::uint64_t size_of(int fd) const;

  int keep_fd_;
  std::string keep_path_;
  FileHeader header_;
  std::uint64_t max_bytes_;
  std::uint64_t segment_bytes_;
  std::atomic<int> events_fd_;
  std::mutex drop_mutex_;  // one maintain() at a time; taken before mutex_
  std::mutex mutex_;       // the segments and the next one: held briefly, never while a segment is read back
  std::deque<Segment> segments_;
  std::vector<int> retired_fds_;  // closed two rotations after their segment left
  std::uint32_t next_seq_ = 1;
  // The next segment, made ready by prepare_next(): its file, and its
  // Segment chunk for the keep file, to write without allocating. A thread
  // that finds the current file full claims it by swapping next_fd_ to -1,
  // writes the chunk, then publishes it as events_fd_; maintain() then
  // adds it to segments_ and makes the next one ready.
  Segment next_{};
  std::string next_chunk_;
  std::atomic<int> next_fd_{-1};
  std::atomic<bool> switch_failed_{false};  // a thread took the next segment and could not switch to it
  int header_fd_ = -1;  // the keep file, to mark it version 3 at its first segment
  Retainer retainer_;
};

}  // namespace gpudiag::gdtrace
