#include "copy_guard.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace gpudiag::cupti {
namespace {

// Accesses whose guard another thread lifted this recently are retried
// without a record: the page was protected when they faulted and is not now.
constexpr std::uint64_t kRecentNs = 1'000'000'000;

// Bounded so that a forgotten event cannot grow the map for ever; when full
// it is cleared, and every guard released (a sync of a forgotten event is
// then no longer known to cover only some).
constexpr std::size_t kMaxEvents = 1u << 16;

std::uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

int protect(std::uint64_t start, std::uint64_t end, int prot) noexcept {
  return ::mprotect(reinterpret_cast<void*>(start), end - start, prot);
}

}  // namespace

SyncScope scope_of(std::uint64_t stream, bool blocking) {
  SyncScope s{.stream = stream};
  if (stream == kLegacyStream)
    s.blocking_too = true;
  else if ((stream & kPerThreadStreamTag) != 0 || blocking)
    s.legacy_too = true;
  return s;
}

Access access_of(const void* ucontext) noexcept {
  if (ucontext == nullptr) return Access::Unknown;
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  // The page-fault error code: bit 1 is set for a write.
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? Access::Write : Access::Read;
#elif defined(__aarch64__)
  // The kernel appends records to __reserved: {u32 magic, u32 size, ...}; the
  // ESR record (magic "ESR\x01") holds the syndrome of a data abort, whose
  // bit 6 (WnR) is set for a write.
  constexpr std::uint32_t kEsrMagic = 0x45535201;
  const unsigned char* p = uc->uc_mcontext.__reserved;
  const std::size_t room = sizeof uc->uc_mcontext.__reserved;
  for (std::size_t off = 0; off + 8 <= room;) {
    std::uint32_t magic = 0, size = 0;
    std::memcpy(&magic, p + off, 4);
    std::memcpy(&size, p + off + 4, 4);
    if (magic == 0 || size < 8 || off + size > room) break;
    if (magic == kEsrMagic && size >= 16) {
      std::uint64_t esr = 0;
      std::memcpy(&esr, p + off + 8, 8);
      const std::uint64_t ec = (esr >> 26) & 0x3f;
      if (ec != 0x24 && ec != 0x25) return Access::Unknown;  // not a data abort
      return (esr & (1u << 6)) != 0 ? Access::Write : Access::Read;
    }
    off += size;
  }
  return Access::Unknown;
#else
  (void)uc;
  return Access::Unknown;
#endif
}

void CopyGuard::SpinLock::lock() noexcept {
  const unsigned long self = static_cast<unsigned long>(pthread_self());
  for (int spins = 0;; ++spins) {
    unsigned long expected = 0;
    if (owner_.compare_exchange_weak(expected, self, std::memory_order_acquire, std::memory_order_relaxed)) return;
    if (spins > 64) sched_yield();
  }
}

bool CopyGuard::SpinLock::held_by_this_thread() const noexcept {
  return owner_.load(std::memory_order_relaxed) == static_cast<unsigned long>(pthread_self());
}

CopyGuard::CopyGuard(Sink sink, std::size_t page_size)
    : sink_(sink), page_(page_size != 0 ? page_size : static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {}

bool CopyGuard::guard(std::uint64_t dst, std::uint64_t bytes, std::uint64_t stream, bool blocking,
                      std::uint64_t correlation) {
  const std::uint64_t page = page_;
  const std::uint64_t start = (dst + page - 1) / page * page;
  const std::uint64_t end = dst + bytes < dst ? 0 : (dst + bytes) / page * page;  // whole pages only
  Locked locked(lock_);
  if (start == 0 || end <= start) {
    ++stats_.no_whole_page;
    return false;
  }
  std::size_t slot = 0;
  while (slot < high_ && entries_[slot].active) ++slot;
  if (slot == kCapacity) {
    ++stats_.table_full;
    return false;
  }
  // Protected under the lock: a release running at the same time cannot
  // unprotect these pages after we protect them and before the entry exists.
  if (protect(start, end, PROT_NONE) != 0) {
    // A range with a hole fails with ENOMEM after protecting the mappings
    // before the hole: give back what no pending guard holds.
    unprotect_uncovered(start, end);
    ++stats_.protect_failed;
    return false;
  }
  Entry& e = entries_[slot];
  e = Entry{.start = start, .end = end, .seq = next_seq_.fetch_add(1, std::memory_order_acq_rel),
            .correlation = correlation, .streams = {stream}, .stream_count = 1,
            .blocking = blocking || stream == kLegacyStream || (stream & kPerThreadStreamTag) != 0, .active = true};
  high_ = std::max(high_, slot + 1);
  ++pending_;
  ++stats_.guarded;
  return true;
}

bool CopyGuard::covers(const Entry& e, const SyncScope& scope) noexcept {
  if (!e.active || e.seq >= scope.before) return false;
  if (scope.blocking_too && e.blocking) return true;
  for (std::uint8_t i = 0; i < e.stream_count; ++i)
    if (e.streams[i] == scope.stream || (scope.legacy_too && e.streams[i] == kLegacyStream)) return true;
  return false;
}

// Unprotects the parts of [start, end) that no pending guard covers: from
// `pos`, skip what a pending guard covers, else unprotect up to the next
// pending guard's start. No allocation: it may run in the signal handler.
void CopyGuard::unprotect_uncovered(std::uint64_t start, std::uint64_t end) noexcept {
  std::uint64_t pos = start;
  while (pos < end) {
    std::uint64_t covered_to = 0, next_start = end;
    for (std::size_t j = 0; j < high_; ++j) {
      const Entry& o = entries_[j];
      if (!o.active) continue;
      if (o.start <= pos && pos < o.end) covered_to = std::max(covered_to, o.end);
      else if (o.start > pos && o.start < next_start) next_start = o.start;
    }
    if (covered_to != 0) {
      pos = covered_to;
      continue;
    }
    protect(pos, next_start, PROT_READ | PROT_WRITE);
    pos = next_start;
  }
}

void CopyGuard::release_marked(const Index* indices, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) entries_[indices[k]].active = false;
  pending_ -= n;
  const std::uint64_t now_ns = n != 0 ? monotonic_ns() : 0;
  for (std::size_t k = 0; k < n; ++k) {
    const Entry& e = entries_[indices[k]];
    unprotect_uncovered(e.start, e.end);
    recent_[recent_next_] = {e.start, e.end, now_ns};
    recent_next_ = (recent_next_ + 1) % kRecent;
  }
  while (high_ > 0 && !entries_[high_ - 1].active) --high_;
}

template <class Pred>
std::size_t CopyGuard::release_if(Pred pred) {
  Index indices[kCapacity];
  std::size_t n = 0;
  Locked locked(lock_);
  for (std::size_t i = 0; i < high_; ++i)
    if (entries_[i].active && pred(entries_[i])) indices[n++] = static_cast<Index>(i);
  release_marked(indices, n);
  return n;
}

std::size_t CopyGuard::release(const SyncScope& scope) {
  return release_if([&](const Entry& e) { return covers(e, scope); });
}

std::size_t CopyGuard::release_all() {
  return release_if([](const Entry&) { return true; });
}

std::size_t CopyGuard::release_range(std::uint64_t addr, std::uint64_t bytes) {
  const std::uint64_t end = addr + bytes < addr ? UINT64_MAX : addr + bytes;
  return release_if([&](const Entry& e) { return e.start < end && addr < e.end; });
}

void CopyGuard::event_recorded(std::uint64_t event, SyncScope scope) {
  scope.before = now();
  bool forgot = false;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    if (events_.size() >= kMaxEvents && events_.find(event) == events_.end()) {
      events_.clear();
      forgot = true;
    }
    events_[event] = scope;
  }
  if (forgot) release_all();
}

std::size_t CopyGuard::event_completed(std::uint64_t event) {
  SyncScope scope;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto it = events_.find(event);
    if (it == events_.end()) return release_all();
    scope = it->second;
  }
  return release(scope);
}

void CopyGuard::stream_waits_event(std::uint64_t stream, bool blocking, std::uint64_t event) {
  SyncScope scope;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto it = events_.find(event);
    if (it == events_.end()) return;  // never recorded while tracing: it covers no guard
    scope = it->second;
  }
  // What the event covers, `stream` now waits for: a sync of it covers them
  // too. A guard with no room for another stream is released.
  Index full[kCapacity];
  std::size_t n = 0;
  Locked locked(lock_);
  for (std::size_t i = 0; i < high_; ++i) {
    Entry& e = entries_[i];
    if (!covers(e, scope) || std::find(e.streams, e.streams + e.stream_count, stream) != e.streams + e.stream_count)
      continue;
    if (e.stream_count == kMaxStreams) {
      full[n++] = static_cast<Index>(i);
      continue;
    }
    e.streams[e.stream_count++] = stream;
    e.blocking = e.blocking || blocking || stream == kLegacyStream || (stream & kPerThreadStreamTag) != 0;
  }
  release_marked(full, n);
}

bool CopyGuard::on_fault(std::uint64_t addr, Access access, const void* context) noexcept {
  // This thread holds the lock (a signal handler of the program's that reads
  // a guarded buffer, run while the thread was inside the guard): waiting
  // would never end.
  if (lock_.held_by_this_thread()) return false;
  constexpr std::size_t kMaxRecords = 8;
  std::uint64_t correlations[kMaxRecords];
  std::size_t records = 0;
  {
    Index indices[kCapacity];
    std::size_t n = 0;
    Locked locked(lock_);
    const std::uint64_t page = addr / page_ * page_;
    for (std::size_t i = 0; i < high_; ++i) {
      const Entry& e = entries_[i];
      if (!e.active || page < e.start || page >= e.end) continue;
      indices[n++] = static_cast<Index>(i);
      if (records < kMaxRecords) correlations[records++] = e.correlation;
    }
    if (n == 0) {
      // Lifted by another thread after this access faulted: retrying succeeds.
      const std::uint64_t now_ns = monotonic_ns();
      for (const Released& r : recent_)
        if (r.time_ns != 0 && r.start <= page && page < r.end && now_ns - r.time_ns < kRecentNs) return true;
      return false;
    }
    release_marked(indices, n);
    stats_.faults += n;
  }
  for (std::size_t k = 0; k < records; ++k)
    sink_(rec::GuardedAccessRecord{.address = addr,
                                   .copy_correlation = correlations[k],
                                   .write = access == Access::Write,
                                   .access_known = access != Access::Unknown},
          context);
  return true;
}

std::size_t CopyGuard::pending() const noexcept {
  Locked locked(const_cast<SpinLock&>(lock_));
  return pending_;
}

GuardStats CopyGuard::stats() const noexcept {
  Locked locked(const_cast<SpinLock&>(lock_));
  return stats_;
}

namespace {

std::atomic<CopyGuard*> g_guard{nullptr};

bool guard_fault_filter(const siginfo_t* info, void* context) noexcept {
  // Protected pages fault with SEGV_ACCERR; anything else is not ours.
  if (info == nullptr || info->si_code != SEGV_ACCERR) return false;
  CopyGuard* guard = g_guard.load(std::memory_order_acquire);
  return guard != nullptr &&
         guard->on_fault(reinterpret_cast<std::uint64_t>(info->si_addr), access_of(context), context);
}

}  // namespace

CopyGuard* copy_guard() noexcept { return g_guard.load(std::memory_order_acquire); }

bool install_copy_guard() {
  if (g_guard.load() == nullptr) {
    static CopyGuard* guard = new CopyGuard();  // never destroyed: faults may come until the process ends
    g_guard.store(guard, std::memory_order_release);
    pthread_atfork(nullptr, nullptr, [] {
      if (CopyGuard* g = copy_guard()) g->after_fork_in_child();
    });
  }
  rec::set_fault_filter(guard_fault_filter);
  return rec::fault_filter_reachable();
}

}  // namespace gpudiag::cupti
