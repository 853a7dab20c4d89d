#include "emu/emu_streams.h"

#include <algorithm>
#include <exception>

#include "gdrt/error.h"

namespace gdrt::emu {

Streams::Streams(std::function<void()> on_worker_start) : on_worker_start_(std::move(on_worker_start)) {
  auto s = std::make_unique<State>();
  State* raw = s.get();
  streams_.emplace(0, std::move(s));
  raw->worker = std::thread([this, raw] { run(0, raw); });
}

Streams::~Streams() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, s] : streams_) {
      s->stopping = true;
      workers.push_back(std::move(s->worker));
    }
  }
  changed_.notify_all();
  for (auto& w : workers) w.join();
}

Streams::State& Streams::state(StreamId stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) throw Error("emu: stream " + std::to_string(stream) + " does not exist (destroyed?)");
  return *it->second;
}

bool Streams::satisfied(const std::vector<StreamPoint>& after) const {
  for (const StreamPoint& p : after) {
    auto it = streams_.find(p.stream);
    const std::uint64_t completed = it != streams_.end() ? it->second->completed : retired_.at(p.stream);
    if (completed < p.seq) return false;
  }
  return true;
}

Streams::Clock Streams::clock_at(StreamPoint point) const {
  Clock c;
  if (auto s = streams_.find(point.stream); s != streams_.end()) {
    const auto& clocks = s->second->clocks;
    if (auto it = clocks.upper_bound(point.seq); it != clocks.begin()) c = std::prev(it)->second;
  }
  c[point.stream] = point.seq;
  return c;
}

bool Streams::ordered_before(StreamPoint earlier, StreamPoint later) const {
  if (earlier.stream == later.stream) return earlier.seq <= later.seq;
  std::lock_guard lock(mutex_);
  const Clock c = clock_at(later);
  const auto it = c.find(earlier.stream);
  return it != c.end() && it->second >= earlier.seq;
}

namespace {
thread_local StreamPoint t_running;
// Clocks kept per stream. Past that the oldest go, and a point older than
// all that are kept is taken to wait for nothing it did not wait for itself.
constexpr std::size_t kKeptClocks = 4096;
}  // namespace

StreamPoint Streams::running() { return t_running; }

StreamId Streams::create(StreamFlags flags) {
  std::lock_guard lock(mutex_);
  const StreamId id = next_++;
  auto s = std::make_unique<State>();
  s->blocking = flags == StreamFlags::blocking;
  State* raw = s.get();
  streams_.emplace(id, std::move(s));
  raw->worker = std::thread([this, id, raw] { run(id, raw); });
  return id;
}

void Streams::destroy(StreamId stream) {
  if (stream == 0) return;
  synchronize(stream);
  std::thread worker;
  {
    std::lock_guard lock(mutex_);
    State& s = state(stream);
    s.stopping = true;
    worker = std::move(s.worker);
  }
  changed_.notify_all();
  worker.join();
  std::lock_guard lock(mutex_);
  retired_[stream] = state(stream).completed;
  streams_.erase(stream);
}

StreamPoint Streams::enqueue(StreamId stream, std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    State& s = state(stream);
    Task t{std::move(work), std::move(s.pending_waits), ++s.queued};
    s.pending_waits.clear();
    // The legacy default stream's implicit ordering, taken where the queues stand now.
    if (stream == 0) {
      for (auto& [id, other] : streams_)
        if (id != 0 && other->blocking && other->queued > 0) t.after.push_back({id, other->queued});
    } else if (s.blocking) {
      const State& legacy = *streams_.at(0);
      if (legacy.queued > 0) t.after.push_back({0, legacy.queued});
    }
    if (!t.after.empty()) {
      Clock c = s.clocks.empty() ? Clock{} : s.clocks.rbegin()->second;
      for (const StreamPoint& p : t.after)
        for (const auto& [other, seq] : clock_at(p))
          if (other != stream) c[other] = std::max(c[other], seq);
      if (s.clocks.empty() || c != s.clocks.rbegin()->second) {
        s.clocks.emplace(t.seq, std::move(c));
        if (s.clocks.size() > kKeptClocks) s.clocks.erase(s.clocks.begin());
      }
    }
    s.queue.push_back(std::move(t));
  }
  changed_.notify_all();
  std::lock_guard lock(mutex_);
  return {stream, state(stream).queued};
}

void Streams::wait(StreamId stream, StreamPoint point) {
  std::lock_guard lock(mutex_);
  state(stream).pending_waits.push_back(point);
}

StreamPoint Streams::now(StreamId stream) {
  {
    std::lock_guard lock(mutex_);
    State& s = state(stream);
    if (s.pending_waits.empty()) return {stream, s.queued};
  }
  // Waits with no work after them yet are still part of the stream's order
  // (cudaStreamWaitEvent, then cudaEventRecord): an empty task holds them.
  return enqueue(stream, [] {});
}

std::vector<StreamPoint> Streams::now_all() {
  std::lock_guard lock(mutex_);
  std::vector<StreamPoint> out;
  for (auto& [id, s] : streams_) out.push_back({id, s->queued});
  return out;
}

bool Streams::done(StreamPoint point) {
  std::lock_guard lock(mutex_);
  return satisfied({point});
}

void Streams::synchronize(StreamPoint point) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return satisfied({point}); });
}

void Streams::synchronize(StreamId stream) { synchronize(now(stream)); }

void Streams::synchronize_all() {
  const auto points = now_all();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return satisfied(points); });
}

void Streams::abandon() {
  std::unique_lock lock(mutex_);
  abandoned_ = true;
  for (auto& [id, st] : streams_) {
    st->queue.clear();
    st->head = 0;
    st->completed = st->queued;
  }
  changed_.notify_all();
  changed_.wait(lock, [&] { return running_ == 0; });
}

void Streams::check() const {
  std::lock_guard lock(mutex_);
  if (!error_.empty()) throw Error(error_);
}

void Streams::fail(const std::string& message) {
  std::lock_guard lock(mutex_);
  if (error_.empty()) error_ = message;
}

void Streams::run(StreamId id, State* s) {
  if (on_worker_start_) on_worker_start_();
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return (s->head < s->queue.size() && satisfied(s->queue[s->head].after)) ||
             (s->stopping && s->head == s->queue.size());
    });
    if (s->head == s->queue.size()) return;
    Task task = std::move(s->queue[s->head++]);
    if (s->head == s->queue.size()) {
      s->queue.clear();
      s->head = 0;
    }
    // After a failure the device is unusable, as after a sticky CUDA error:
    // queued work is dropped, but still counts as completed so waits end.
    const bool run_it = error_.empty() && !abandoned_;
    ++running_;
    lock.unlock();
    if (run_it) {
      try {
        t_running = {id, task.seq};
        task.work();
      } catch (const std::exception& e) {
        fail(std::string("emu: stream ") + std::to_string(id) + ": " + e.what());
      }
    }
    lock.lock();
    --running_;
    s->completed = std::max(s->completed, task.seq);
    changed_.notify_all();
  }
}

}  // namespace gdrt::emu
