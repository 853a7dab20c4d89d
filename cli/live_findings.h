// Findings while the run goes: what `gpudiag trace` prints on its own stderr,
// one line per new problem, as the traced processes' .gdtrace files grow
// (`gpudiag: GD008 out-of-memory: ... at train_step (train.cpp:88)`). This is
// the pure part, fed bytes and chunks and returning lines; live_watch.h
// follows the files.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag::cli {

// Splits a .gdtrace, given as its bytes are appended, into its whole chunks.
// A chunk not yet complete waits for more bytes: the recorder writes each
// chunk with one write(2), and what a reader sees of it below the file's
// size is final, so only a chunk cut short is ever incomplete. A file that
// is not a .gdtrace, or a damaged chunk, stops the tail there: the
// end-of-run report says what is wrong with the file.
class GdtraceTail {
 public:
  struct Chunk {
    std::uint16_t type = 0;
    std::string_view payload;  // valid until the next append()
  };
  // The next bytes of the file.
  void append(std::string_view bytes);
  // The next whole chunk, its checksum checked; false when there is none yet.
  bool next(Chunk& chunk);
  // The pid of the file's header; 0 before the header is complete.
  std::int64_t pid() const { return pid_; }
  // No more of this file will be read: it is not a .gdtrace, or is damaged.
  bool stopped() const { return stopped_; }

 private:
  std::string buffer_;
  std::size_t pos_ = 0;  // where the next chunk starts in buffer_
  bool header_read_ = false;
  bool stopped_ = false;
  std::int64_t pid_ = 0;
};

// The problems that a chunk shows, as lines to print:
// - a guarded early read (GuardedAccess chunk): GD003 unsynced-transfer;
// - a kernel argument inside memory that was freed and not allocated again
//   before the launch: GD004 premature-free;
// - an out-of-memory (OutOfMemory event, or an allocation call that
//   returned it): GD008 out-of-memory;
// - a crash (Crash chunk), worded as every report words it;
// - a call that returned an error (Api event): GD006 unchecked-cuda-error;
// - the last two also in what a bounded recording kept of a segment it
//   dropped (Retained chunk): the watch may not have read the segment.
// Each problem is said once: by rule and where it happened. Allocations,
// frees and kernel arguments are judged in time order, once the recorder's
// Drained markers say every thread's events up to then are in (the threads'
// chunks reach a file out of order), or at finish().
class LiveFindings {
 public:
  LiveFindings();
  ~LiveFindings();
  // A whole chunk of process `pid`'s recording. The state is the process's,
  // not the file's: a process whose recording continues in a further file
  // is fed that file's chunks under the same pid.
  std::vector<std::string> chunk(std::int64_t pid, std::uint16_t type, std::string_view payload);
  // Every file has been read to its end: judges what was waiting for order.
  std::vector<std::string> finish();

 private:
  struct Process;  // what is known of one process's recording
  void judge(Process& process, std::uint64_t until, std::vector<std::string>& lines);
  void say(std::string key, std::string line, std::vector<std::string>& lines);

  std::map<std::int64_t, std::unique_ptr<Process>> processes_;
  std::set<std::string> said_;
};

}  // namespace gpudiag::cli
