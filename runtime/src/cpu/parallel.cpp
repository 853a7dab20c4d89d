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
    const std::int64_t parts = std::min<std::int64_t>(n, kPartsPerThread * size_);
    {
      std::lock_guard lock(mutex_);
      body_ = &body;
      n_ = n;
      parts_ = parts;
      next_.store(1);
      pending_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
    work(0);  // the caller takes part 0, then helps with whatever is left
    for (std::int64_t p; (p = next_.fetch_add(1)) < parts_;) work(p), finish_one();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    body_ = nullptr;
  }

 private:
  void work(std::int64_t part) { const std::int64_t parts = parts_.load();
    (*body_)(n_ * part / parts, n_ * (part + 1) / parts); }
  void finish_one() {
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
      }
      for (std::int64_t p; (p = next_.fetch_add(1)) < parts_;) work(p), finish_one();
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
  const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
  std::int64_t n_ = 0, pending_ = 0;
  std::atomic<std::int64_t> parts_{0};
  std::atomic<std::int64_t> next_{0};
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
