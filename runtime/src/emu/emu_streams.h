// emu's streams: each is a worker thread that runs its queued work in order,
// later than the host queued it, with CUDA's ordering rules between streams:
// the legacy default stream (id 0) waits for every blocking stream's earlier
// work and is waited on by their later work; non-blocking streams are exempt;
// events order any two streams. A failure in queued work is sticky, as a
// CUDA error is: every later call reports it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gdrt/backend.h"

namespace gdrt::emu {

// Where a stream's queue stood: work up to `seq` on `stream`.
struct StreamPoint {
  StreamId stream = 0;
  std::uint64_t seq = 0;
};

class Streams {
 public:
  // `on_worker_start` runs first on each stream's worker thread.
  explicit Streams(std::function<void()> on_worker_start);
  ~Streams();
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  StreamId create(StreamFlags flags);
  // Waits for the stream's work, then retires its worker.
  void destroy(StreamId stream);
  // Queues `work` on `stream`; it runs on the stream's worker after the work
  // it must follow. Returns where it stands in the stream's order. A throw
  // from `work` becomes the sticky error.
  StreamPoint enqueue(StreamId stream, std::function<void()> work);
  // Later work on `stream` waits for `point` (cudaStreamWaitEvent).
  void wait(StreamId stream, StreamPoint point);
  // Where `stream`'s queue stands now (an event's record).
  StreamPoint now(StreamId stream);
  // Where every stream's queue stands now.
  std::vector<StreamPoint> now_all();
  // Whether the work at `earlier` runs before the work at `later` in every
  // run: on one stream, or because `later`'s stream waited for it, directly
  // or through others (events, the legacy default stream's rules).
  bool ordered_before(StreamPoint earlier, StreamPoint later) const;
  // The point of the work this thread is running, if it is a stream's worker.
  static StreamPoint running();
  bool done(StreamPoint point);
  // The host blocks until the point (or the stream, or all streams) is done.
  void synchronize(StreamPoint point);
  void synchronize(StreamId stream);
  void synchronize_all();
  // At process exit: drops all queued work and waits for the work running
  // now, as a GPU abandons its queues when the process goes, so no worker is
  // inside a library whose static objects exit() is about to destroy. Work
  // queued later is dropped too.
  void abandon();
  // Throws the sticky error, if queued work has failed.
  void check() const;
  // Records the sticky error (first one wins).
  void fail(const std::string& message);

 private:
  struct Task {
    std::function<void()> work;
    std::vector<StreamPoint> after;
    std::uint64_t seq;
  };
  // For each other stream, the last of its work that a point comes after: a
  // vector clock. A stream's clock changes only when its work waits for
  // another stream's, so each keeps the clocks it had from those points on.
  using Clock = std::map<StreamId, std::uint64_t>;
  struct State {
    bool blocking = true;
    bool stopping = false;
    std::uint64_t queued = 0, completed = 0;
    std::vector<Task> queue;  // FIFO: front at `head`
    std::size_t head = 0;
    std::vector<StreamPoint> pending_waits;
    std::map<std::uint64_t, Clock> clocks;  // seq -> the clock from there on
    std::thread worker;
  };
  State& state(StreamId stream);  // mutex held
  bool satisfied(const std::vector<StreamPoint>& after) const;  // mutex held
  Clock clock_at(StreamPoint point) const;                       // mutex held
  void run(StreamId id, State* s);

  std::function<void()> on_worker_start_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<StreamId, std::unique_ptr<State>> streams_;
  // Completed positions of destroyed streams count as done.
  std::map<StreamId, std::uint64_t> retired_;
  StreamId next_ = 1;
  std::string error_;
  bool abandoned_ = false;
  int running_ = 0;
};

}  // namespace gdrt::emu
