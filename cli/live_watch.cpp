#include "live_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gdtrace_format.h"
#include "gpudiag/descriptors.h"
#include "live_findings.h"

namespace gpudiag::cli {
namespace {

namespace fs = std::filesystem;

// One file being followed, from its own descriptor: the root's is renamed
// only after the watch stops.
struct Followed {
  int fd = -1;
  GdtraceTail tail;
  ~Followed() {
    if (fd >= 0) close(fd);
  }
};

class Follower {
 public:
  Follower(const TraceFiles& files, fs::file_time_type since, const LiveWatch::Print& print)
      : files_(files), since_(since), print_(print) {}

  // Opens the files that appeared and reads what each has gained. A
  // bounded recording's events continue in segment files its trace file
  // names (Segment chunks): those are read after the trace files, and the
  // trace files' Drained markers, which speak for what the segments hold up
  // to then, are applied last.
  void poll() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(files_.dir, ec)) {
      const std::string name = e.path().filename().string();
      if (followed_.contains(name) || files_.pid_of(name) < 0) continue;
      // Only this run's: files written since it started, as run_traced keeps them.
      std::error_code time_ec;
      if (fs::last_write_time(e.path(), time_ec) + std::chrono::seconds(1) < since_ || time_ec) continue;
      const int fd = open_above_stdio(e.path().c_str(), O_RDONLY);
      if (fd < 0) continue;
      followed_[name].fd = fd;
    }
    std::vector<std::pair<std::int64_t, std::string>> drained;
    for (auto& [name, file] : followed_)
      read_new(file, [&](std::int64_t pid, const GdtraceTail::Chunk& chunk) {
        if (chunk.type == kDrained)
          drained.emplace_back(pid, std::string(chunk.payload));
        else if (chunk.type == kSegment)
          follow_segment(name, chunk.payload);
        else
          show(findings_.chunk(pid, chunk.type, chunk.payload));
      });
    for (auto& [key, file] : segments_)
      read_new(file, [&](std::int64_t pid, const GdtraceTail::Chunk& chunk) {
        show(findings_.chunk(pid, chunk.type, chunk.payload));
      });
    for (const auto& [pid, payload] : drained) show(findings_.chunk(pid, kDrained, payload));
    close_old_segments();
  }

  void finish() { show(findings_.finish()); }

 private:
  void show(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) print_(line);
  }

  static constexpr auto kDrained = static_cast<std::uint16_t>(gdtrace::ChunkType::Drained);
  static constexpr auto kSegment = static_cast<std::uint16_t>(gdtrace::ChunkType::Segment);

  template <class OnChunk>
  static void read_new(Followed& file, OnChunk on_chunk) {
    char buffer[1 << 16];
    for (ssize_t got; !file.tail.stopped() && (got = read(file.fd, buffer, sizeof buffer)) > 0;) {
      file.tail.append(std::string_view(buffer, static_cast<std::size_t>(got)));
      GdtraceTail::Chunk chunk;
      while (file.tail.next(chunk)) on_chunk(file.tail.pid(), chunk);
    }
  }

  // A Segment chunk: u32 seq, then the file's name beside the trace file.
  // Opened at once: the recorder may remove it once it has kept its part.
  void follow_segment(const std::string& trace, std::string_view payload) {
    if (payload.size() <= 4) return;
    std::uint32_t seq = 0;
    std::memcpy(&seq, payload.data(), sizeof seq);
    const std::string name(payload.substr(4));
    if (name.find('/') != std::string::npos || segments_.contains({trace, seq})) return;
    const int fd = open_above_stdio((files_.dir / name).c_str(), O_RDONLY);
    if (fd >= 0) segments_[{trace, seq}].fd = fd;
  }

  // A segment two older than its trace's newest gets no more events, and
  // this pass read it to its end: closed, so that a removed one frees its
  // disk space and a long run does not use up descriptors.
  void close_old_segments() {
    std::map<std::string, std::uint32_t> newest;
    for (const auto& [key, file] : segments_) newest[key.first] = std::max(newest[key.first], key.second);
    std::erase_if(segments_, [&](const auto& entry) { return entry.first.second + 2 < newest[entry.first.first]; });
  }

  const TraceFiles& files_;
  fs::file_time_type since_;
  const LiveWatch::Print& print_;
  std::map<std::string, Followed> followed_;
  // Segment files, by their trace file and seq (so read in the order
  // written); a removed one still reads while it is open.
  std::map<std::pair<std::string, std::uint32_t>, Followed> segments_;
  LiveFindings findings_;
};

}  // namespace

LiveWatch::LiveWatch(TraceFiles files, fs::file_time_type since, Print print, std::chrono::milliseconds interval)
    : files_(std::move(files)), since_(since), print_(std::move(print)), interval_(interval) {
  thread_ = std::thread([this] { run(); });
}

LiveWatch::~LiveWatch() { stop(); }

void LiveWatch::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LiveWatch::run() {
  std::unique_lock lock(mutex_);
  try {
    Follower follower(files_, since_, print_);
    for (;;) {
      const bool last = stopping_;
      lock.unlock();
      // After the stop request: the processes are gone, and this pass reads
      // every byte they wrote.
      follower.poll();
      lock.lock();
      if (last) break;
      wake_.wait_for(lock, interval_, [this] { return stopping_; });
    }
    lock.unlock();
    follower.finish();
  } catch (const std::exception& e) {
    // What goes wrong here must not end gpudiag, which still waits for the
    // command and reports on its traces.
    print_(std::string("gpudiag: stopped saying problems while the command runs: ") + e.what());
  }
}

}  // namespace gpudiag::cli
