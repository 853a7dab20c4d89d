// The copy guard: GD003 (unsynced-transfer) caught as it happens.
//
// An asynchronous device-to-host copy into pinned memory returns before the
// data is there. The guard read-protects (mprotect PROT_NONE) the pages
// wholly inside the copy's destination until a synchronisation that covers
// the copy's stream; the copy engine still writes them (the GPU does not go
// through the CPU's page tables). A host read or write of such a page before
// then faults: the recorder's SIGSEGV handler offers the fault to on_fault(),
// which lifts the guard, records the access (GuardedAccess chunk: the
// accessing stack and the copy's correlation id) and lets the program go on.
//
// What releases a guard (conservatively: a missed GD003 is better than a
// false one; see SyncScope):
//   - a stream synchronisation, or a stream query that reports completion,
//     releases the guards of that stream and of the streams it is ordered
//     after (the legacy default stream orders every blocking stream);
//   - an event recorded on a stream marks the guards set on it so far; a
//     sync of the event, or a query that reports it complete, releases
//     those; a stream that waits for the event takes them over;
//   - device and context syncs, and whatever else the caller deems a sync of
//     everything, release all;
//   - memory about to be freed must be released first (release_range or
//     release_all), or it would go back to its allocator read-protected.
// Overlapping guards on the same pages are counted: a page is unprotected
// (made readable and writable again, as a copy's destination is) when the
// last guard covering it is released.
//
// Independent of CUPTI and CUDA: the injection library drives it from its
// callbacks (copy_guard_calls.h); the tests drive it on anonymous memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "gpudiag/fault_filter.h"

namespace gpudiag::cupti {

// Stream identity, the same for a copy and the syncs that cover it: the
// CUstream handle value, except for the default streams.
inline constexpr std::uint64_t kLegacyStream = 0;
inline constexpr std::uint64_t kPerThreadStreamTag = 1ull << 63;
constexpr std::uint64_t per_thread_stream(std::uint32_t tid) { return kPerThreadStreamTag | tid; }

// The guards a synchronisation covers.
struct SyncScope {
  std::uint64_t stream = kLegacyStream;  // the guards of this stream
  bool legacy_too = false;               // and those of the legacy default stream
  bool blocking_too = false;             // and those of every blocking stream (what the legacy stream orders)
  std::uint64_t before = UINT64_MAX;     // only guards set before this point (CopyGuard::now())
};

// What a sync of `stream` covers: the legacy default stream waits for every
// blocking stream; a blocking stream (and the per-thread default stream)
// waits for the legacy default stream; a non-blocking stream only for itself.
SyncScope scope_of(std::uint64_t stream, bool blocking);

enum class Access : std::uint8_t { Read, Write, Unknown };

// From a SIGSEGV handler's ucontext: x86-64's page-fault error code (bit 1:
// write), aarch64's ESR (WnR) when the kernel provides it; else Unknown.
Access access_of(const void* ucontext) noexcept;

struct GuardStats {
  std::uint64_t guarded = 0;           // copies whose destination was protected
  std::uint64_t no_whole_page = 0;     // destinations with no whole page inside: nothing to protect
  std::uint64_t table_full = 0;        // not guarded: kCapacity guards were pending
  std::uint64_t protect_failed = 0;    // not guarded: mprotect refused (e.g. huge pages)
  std::uint64_t faults = 0;            // accesses caught (one per guard lifted by a fault)
};

class CopyGuard {
 public:
  static constexpr std::size_t kCapacity = 4096;
  static constexpr std::size_t kMaxStreams = 4;  // a guard's own stream and those that waited for it
  using Sink = void (*)(const rec::GuardedAccessRecord& access, const void* context) noexcept;

  // `sink` receives each caught access from on_fault (async-signal-safe).
  explicit CopyGuard(Sink sink = rec::record_guarded_access, std::size_t page_size = 0);
  CopyGuard(const CopyGuard&) = delete;
  CopyGuard& operator=(const CopyGuard&) = delete;

  // Protects the pages wholly inside [dst, dst + bytes) until a sync covers
  // `stream` (blocking: whether the legacy default stream orders it).
  // Returns false, and protects nothing, when no whole page is inside, the
  // table is full or mprotect fails.
  bool guard(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream, bool blocking, std::uint64_t correlation);

  // The current point in the sequence of guards (for SyncScope::before).
  std::uint64_t now() const noexcept { return next_seq_.load(std::memory_order_acquire); }

  // Releases the guards the scope covers / all / those overlapping a range.
  // Return how many were released.
  std::size_t release(const SyncScope& scope);
  std::size_t release_all();
  std::size_t release_range(std::uint64_t addr, std::uint64_t bytes);

  // Events: recorded on a stream (`scope`: what a sync of that stream covers;
  // its `before` is set to now()), completed (synced, or queried complete),
  // waited for by another stream. An event never recorded, or forgotten, is
  // conservatively taken to cover everything.
  void event_recorded(std::uint64_t event, SyncScope scope);
  std::size_t event_completed(std::uint64_t event);
  void stream_waits_event(std::uint64_t stream, bool blocking, std::uint64_t event);

  // From the SIGSEGV handler. When addr lies in a guarded page: lifts every
  // guard covering that page, hands each to the sink, returns true (the
  // access is retried and succeeds). Also true, with nothing recorded, when
  // another thread lifted the page's guard between the fault and now. False
  // when the page is not ours. Async-signal-safe: no allocation; the table's
  // spin lock is never held by code that could fault on a guarded page, and
  // a fault on the thread that holds it is declined.
  bool on_fault(std::uint64_t addr, Access access, const void* context) noexcept;

  // In a child just forked: the lock may have been held by a thread the
  // child does not have, and would stay held for ever.
  void after_fork_in_child() noexcept { lock_.unlock(); }

  std::size_t pending() const noexcept;  // guards set and not yet released
  GuardStats stats() const noexcept;
  std::size_t page_size() const noexcept { return page_; }

 private:
  struct Entry {
    std::uint64_t start = 0, end = 0;  // the protected pages
    std::uint64_t seq = 0;
    std::uint64_t correlation = 0;
    std::uint64_t streams[kMaxStreams] = {};
    std::uint8_t stream_count = 0;
    bool blocking = false;
    bool active = false;
  };
  struct Released {
    std::uint64_t start = 0, end = 0, time_ns = 0;
  };
  static constexpr std::size_t kRecent = kCapacity;  // every guard one release can lift

  class SpinLock {
   public:
    void lock() noexcept;
    void unlock() noexcept { owner_.store(0, std::memory_order_release); }
    bool held_by_this_thread() const noexcept;

   private:
    std::atomic<unsigned long> owner_{0};  // pthread_self() of the holder
  };
  struct Locked {
    explicit Locked(SpinLock& l) : lock(l) { lock.lock(); }
    ~Locked() { lock.unlock(); }
    SpinLock& lock;
  };

  using Index = std::uint16_t;
  static_assert(kCapacity <= 65536);

  static bool covers(const Entry& e, const SyncScope& scope) noexcept;
  // Under the lock: releases the entries together (none keeps another's
  // pages protected) and unprotects their pages that no pending guard covers.
  void release_marked(const Index* indices, std::size_t n) noexcept;
  void unprotect_uncovered(std::uint64_t start, std::uint64_t end) noexcept;
  template <class Pred>
  std::size_t release_if(Pred pred);

  Sink sink_;
  std::size_t page_;
  SpinLock lock_;
  Entry entries_[kCapacity];
  std::size_t high_ = 0;    // entries_[high_..] were never used
  std::size_t pending_ = 0;
  Released recent_[kRecent];
  std::size_t recent_next_ = 0;
  std::atomic<std::uint64_t> next_seq_{1};
  GuardStats stats_;

  std::mutex events_mutex_;
  std::unordered_map<std::uint64_t, SyncScope> events_;  // event -> what its completion covers
};

// The process's guard: created and offered every SIGSEGV (through the
// recorder's fault filter) by install_copy_guard(); nullptr before.
CopyGuard* copy_guard() noexcept;
// Creates the process's guard and installs the fault filter. Returns false
// when the filter cannot receive faults (not recording, or another SIGSEGV
// handler is installed after the recorder's): nothing must be guarded then.
bool install_copy_guard();

}  // namespace gpudiag::cupti
