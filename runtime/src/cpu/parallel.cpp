#include "cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace gdrt::cpu {
namespace {

constexpr std::int64_t kPartsPerThread = 4;

class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  void resize(int threads) {
    std::lock_guard busy(use_);
    stop();
    size_ = std::max(1, threads);
    quit_ = false;
    for (int i = 1; i < size_; ++i) workers_.emplace_back([this] { loop(); });
  }
  int size() const { return size_; }

  void run(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body) {
    std::unique_lock busy(use_, std::try_to_lock);
    if (!busy.owns_lock() || size_ == 1 || n < 2) {
      body(0, n);
      return;
    }
    // More parts than threads, claimed one at a time: when a worker is slow to
    // wake or loses its core to another process, the caller takes its share
    // instead of waiting for a fixed half of the work.
    Job job{&body, n, std::min<std::int64_t>(n, kPartsPerThread * size_), 0};
    {
      std::lock_guard lock(mutex_);
      job.generation = ++generation_;
      job_ = job;
      pending_ = job.parts - 1;
      next_.store(job.generation << 32 | 1);
    }
    wake_.notify_all();
    job.work(0);  // the caller takes part 0, then helps with whatever is left
    for (std::int64_t p; (p = claim(job)) >= 0;) job.work(p), finish_one();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  // One parallel_for: its parts are claimed through next_, whose high half
  // is the job's generation, so a thread still finishing an old job can
  // never take (and count twice) a part of the next one. Two threads (the
  // program and an emu stream) may start jobs one after the other while a
  // worker is still leaving the previous one.
  struct Job {
    const std::function<void(std::int64_t, std::int64_t)>* body;
    std::int64_t n, parts;
    std::uint64_t generation;
    void work(std::int64_t part) const { (*body)(n * part / parts, n * (part + 1) / parts); }
  };
  // Compare-and-swap, not fetch_add: a thread holding an old job must not
  // consume (and so lose) an index of the new one.
  std::int64_t claim(const Job& job) {
    std::uint64_t v = next_.load();
    for (;;) {
      const auto part = static_cast<std::int64_t>(v & 0xffffffffu);
      if ((v >> 32) != (job.generation & 0xffffffffu) || part >= job.parts) return -1;
      if (next_.compare_exchange_weak(v, v + 1)) return part;
    }
  }
  void finish_one() {
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        job = job_;
      }
      for (std::int64_t p; (p = claim(job)) >= 0;) job.work(p), finish_one();
    }
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex use_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job job_{};  // the current job, read under mutex_ when a worker wakes
  std::int64_t pending_ = 0;
  std::atomic<std::uint64_t> next_{0};  // generation << 32 | next part
  std::uint64_t generation_ = 0;
  bool quit_ = false;
  int size_ = 1;
};

// Never destroyed (see the backend registry): kernels may run from other
// statics' destructors; the sleeping workers end with the process.
Pool& pool() {
  static Pool* p = new Pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return *p;
}

}  // namespace

void parallel_for(std::int64_t n, bool parallel, const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (n <= 0) return;
  if (!parallel) {
    body(0, n);
    return;
  }
  pool().run(n, body);
}

void set_pool_threads(int n) { pool().resize(n); }
int pool_threads() { return pool().size(); }

}  // namespace gdrt::cpu
