// The copy guard (record/cupti/copy_guard.h) on the CPU: anonymous memory
// stands in for pinned memory, and the tests play the copies and syncs. What
// would fault runs in a forked child that records a trace, so that the test
// process's signal handlers stay as they are.
#include "copy_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <vector>

#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag::cupti {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

struct Pages {
  explicit Pages(std::size_t n) : count(n) {
    void* m = mmap(nullptr, n * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
  }
  ~Pages() {
    if (base) munmap(base, count * kPage);
  }
  std::uint64_t at(std::size_t page, std::size_t offset = 0) const {
    return reinterpret_cast<std::uint64_t>(base + page * kPage + offset);
  }
  bool page_readable(std::size_t page) const { return test::host_readable(base + page * kPage); }
  char* base = nullptr;
  std::size_t count;
};

// What the sink received, for the guards of these tests (not called from a
// signal handler here).
std::vector<rec::GuardedAccessRecord>& caught() {
  static std::vector<rec::GuardedAccessRecord> v;
  return v;
}
void test_sink(const rec::GuardedAccessRecord& r, const void*) noexcept { caught().push_back(r); }

class CopyGuardTest : public ::testing::Test {
 protected:
  void SetUp() override { caught().clear(); }
  CopyGuard guard{test_sink};
};

constexpr std::uint64_t kStreamA = 0x5000a, kStreamB = 0x5000b;

TEST_F(CopyGuardTest, OnlyWholePagesInsideTheDestinationAreProtected) {
  Pages m(5);
  // From 100 bytes into page 0 to 100 bytes into page 4: pages 1 to 3 are whole.
  ASSERT_TRUE(guard.guard(m.at(0, 100), 4 * kPage, kStreamA, false, 1));
  EXPECT_TRUE(m.page_readable(0)) << "the partial first page is not protected";
  EXPECT_FALSE(m.page_readable(1));
  EXPECT_FALSE(m.page_readable(3));
  EXPECT_TRUE(m.page_readable(4)) << "the partial last page is not protected";
  EXPECT_TRUE(test::host_readable(m.base + 4 * kPage + 50));
  // A destination within one page, or across two without a whole one: nothing to protect.
  EXPECT_FALSE(guard.guard(m.at(4, 8), 64, kStreamA, false, 2));
  EXPECT_FALSE(guard.guard(m.at(0, kPage / 2), kPage, kStreamA, false, 3));
  EXPECT_EQ(guard.stats().no_whole_page, 2u);
  EXPECT_EQ(guard.pending(), 1u);
  EXPECT_EQ(guard.release_all(), 1u);
  EXPECT_TRUE(m.page_readable(1));
  EXPECT_TRUE(m.page_readable(3));
}

TEST_F(CopyGuardTest, AStreamSyncReleasesThatStreamOnly) {
  Pages m(4);
  ASSERT_TRUE(guard.guard(m.at(0), kPage, kStreamA, false, 1));
  ASSERT_TRUE(guard.guard(m.at(2), kPage, kStreamB, false, 2));
  EXPECT_EQ(guard.release(scope_of(kStreamA, false)), 1u);
  EXPECT_TRUE(m.page_readable(0));
  EXPECT_FALSE(m.page_readable(2)) << "stream B was not synchronised";
  EXPECT_EQ(guard.release(scope_of(kStreamB, false)), 1u);
  EXPECT_TRUE(m.page_readable(2));
  EXPECT_EQ(guard.pending(), 0u);
}

TEST_F(CopyGuardTest, TheLegacyDefaultStreamOrdersBlockingStreamsButNotNonBlockingOnes) {
  Pages m(4);
  ASSERT_TRUE(guard.guard(m.at(0), kPage, kStreamA, /*blocking=*/true, 1));
  ASSERT_TRUE(guard.guard(m.at(1), kPage, kStreamB, /*blocking=*/false, 2));
  ASSERT_TRUE(guard.guard(m.at(2), kPage, per_thread_stream(77), true, 3));
  // cudaStreamSynchronize(0): every blocking stream's earlier work is done, not a non-blocking one's.
  EXPECT_EQ(guard.release(scope_of(kLegacyStream, true)), 2u);
  EXPECT_TRUE(m.page_readable(0));
  EXPECT_FALSE(m.page_readable(1));
  EXPECT_TRUE(m.page_readable(2)) << "the per-thread default stream is blocking";
  guard.release_all();
  // A copy on the legacy stream: a sync of a blocking stream covers it, one of a non-blocking stream does not.
  ASSERT_TRUE(guard.guard(m.at(3), kPage, kLegacyStream, true, 4));
  EXPECT_EQ(guard.release(scope_of(kStreamB, false)), 0u);
  EXPECT_FALSE(m.page_readable(3));
  EXPECT_EQ(guard.release(scope_of(kStreamA, true)), 1u);
  EXPECT_TRUE(m.page_readable(3));
}

TEST_F(CopyGuardTest, AnEventReleasesOnlyTheCopiesIssuedBeforeItsRecord) {
  Pages m(4);
  constexpr std::uint64_t kEvent = 0xe1;
  ASSERT_TRUE(guard.guard(m.at(0), kPage, kStreamA, false, 1));
  ASSERT_TRUE(guard.guard(m.at(1), kPage, kStreamB, false, 2));
  guard.event_recorded(kEvent, scope_of(kStreamA, false));
  ASSERT_TRUE(guard.guard(m.at(2), kPage, kStreamA, false, 3));
  EXPECT_EQ(guard.event_completed(kEvent), 1u);
  EXPECT_TRUE(m.page_readable(0)) << "the copy before the event's record";
  EXPECT_FALSE(m.page_readable(1)) << "another stream's copy";
  EXPECT_FALSE(m.page_readable(2)) << "the copy after the event's record";
  // Recording it again moves its point.
  guard.event_recorded(kEvent, scope_of(kStreamA, false));
  EXPECT_EQ(guard.event_completed(kEvent), 1u);
  EXPECT_TRUE(m.page_readable(2));
  EXPECT_FALSE(m.page_readable(1));
}

TEST_F(CopyGuardTest, AnEventNeverRecordedIsTakenToCoverEverything) {
  Pages m(2);
  ASSERT_TRUE(guard.guard(m.at(0), kPage, kStreamA, false, 1));
  EXPECT_EQ(guard.event_completed(0xdead), 1u);
  EXPECT_TRUE(m.page_readable(0));
}

TEST_F(CopyGuardTest, AStreamThatWaitedForAnEventCoversWhatTheEventCovers) {
  Pages m(3);
  constexpr std::uint64_t kEvent = 0xe2;
  ASSERT_TRUE(guard.guard(m.at(0), kPage, kStreamA, false, 1));
  guard.event_recorded(kEvent, scope_of(kStreamA, false));
  ASSERT_TRUE(guard.guard(m.at(1), kPage, kStreamA, false, 2));
  guard.stream_waits_event(kStreamB, false, kEvent);
  EXPECT_EQ(guard.release(scope_of(kStreamB, false)), 1u);
  EXPECT_TRUE(m.page_readable(0));
  EXPECT_FALSE(m.page_readable(1)) << "issued after the event: stream B did not wait for it";
}

TEST_F(CopyGuardTest, DeviceSyncReleasesEverything) {
  Pages m(4);
  for (std::size_t i = 0; i < 4; ++i) ASSERT_TRUE(guard.guard(m.at(i), kPage, kStreamA + i, false, i + 1));
  EXPECT_EQ(guard.release_all(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(m.page_readable(i)) << i;
}

TEST_F(CopyGuardTest, MemoryAboutToBeFreedIsReleasedFirst) {
  Pages m(6);
  ASSERT_TRUE(guard.guard(m.at(1), 2 * kPage, kStreamA, false, 1));
  ASSERT_TRUE(guard.guard(m.at(4), kPage, kStreamA, false, 2));
  EXPECT_EQ(guard.release_range(m.at(0), 3 * kPage), 1u);
  EXPECT_TRUE(m.page_readable(1));
  EXPECT_TRUE(m.page_readable(2));
  EXPECT_FALSE(m.page_readable(4)) << "outside the freed range";
}

TEST_F(CopyGuardTest, PagesTwoGuardsShareStayProtectedUntilBothAreReleased) {
  Pages m(5);
  ASSERT_TRUE(guard.guard(m.at(0), 3 * kPage, kStreamA, false, 1));  // pages 0-2
  ASSERT_TRUE(guard.guard(m.at(1), 3 * kPage, kStreamB, false, 2));  // pages 1-3
  EXPECT_EQ(guard.release(scope_of(kStreamA, false)), 1u);
  EXPECT_TRUE(m.page_readable(0));
  EXPECT_FALSE(m.page_readable(1));
  EXPECT_FALSE(m.page_readable(2));
  EXPECT_FALSE(m.page_readable(3));
  EXPECT_EQ(guard.release(scope_of(kStreamB, false)), 1u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(m.page_readable(i)) << i;
  // A guard inside another's pages, released first, leaves the outer one whole.
  ASSERT_TRUE(guard.guard(m.at(0), 5 * kPage, kStreamA, false, 3));
  ASSERT_TRUE(guard.guard(m.at(2), kPage, kStreamB, false, 4));
  guard.release(scope_of(kStreamB, false));
  for (std::size_t i = 0; i < 5; ++i) EXPECT_FALSE(m.page_readable(i)) << i;
  guard.release_all();
}

TEST_F(CopyGuardTest, AFullTableGuardsNothingMoreAndCountsIt) {
  Pages m(CopyGuard::kCapacity + 1);
  ASSERT_NE(m.base, nullptr);
  for (std::size_t i = 0; i < CopyGuard::kCapacity; ++i) ASSERT_TRUE(guard.guard(m.at(i), kPage, kStreamA, false, i + 1));
  EXPECT_FALSE(guard.guard(m.at(CopyGuard::kCapacity), kPage, kStreamB, false, 99999));
  EXPECT_TRUE(m.page_readable(CopyGuard::kCapacity)) << "not protected when it cannot be tracked";
  EXPECT_EQ(guard.stats().table_full, 1u);
  EXPECT_EQ(guard.pending(), CopyGuard::kCapacity);
  // A sync makes room again.
  guard.release(scope_of(kStreamA, false));
  EXPECT_TRUE(guard.guard(m.at(CopyGuard::kCapacity), kPage, kStreamB, false, 99999));
  EXPECT_EQ(guard.release_all(), 1u);
}

TEST_F(CopyGuardTest, ARangeMprotectRefusesIsNotGuardedAndLeftAsItWas) {
  Pages m(3);
  ASSERT_EQ(munmap(m.base + kPage, kPage), 0);  // a hole: mprotect protects page 0, then fails
  EXPECT_FALSE(guard.guard(m.at(0), 3 * kPage, kStreamA, false, 1));
  EXPECT_EQ(guard.stats().protect_failed, 1u);
  EXPECT_TRUE(m.page_readable(0)) << "what mprotect protected before it failed is given back";
  EXPECT_TRUE(m.page_readable(2));
  EXPECT_EQ(guard.pending(), 0u);
}

TEST_F(CopyGuardTest, AFaultInAGuardedPageLiftsItsGuardsAndNamesTheCopies) {
  Pages m(4);
  ASSERT_TRUE(guard.guard(m.at(0), 2 * kPage, kStreamA, false, 11));  // pages 0-1
  ASSERT_TRUE(guard.guard(m.at(1), 2 * kPage, kStreamB, false, 12));  // pages 1-2
  ASSERT_TRUE(guard.guard(m.at(3), kPage, kStreamB, false, 13));
  const std::uint64_t addr = m.at(1, 40);
  EXPECT_TRUE(guard.on_fault(addr, Access::Write, nullptr));
  ASSERT_EQ(caught().size(), 2u) << "both copies into page 1";
  std::vector<std::uint64_t> copies{caught()[0].copy_correlation, caught()[1].copy_correlation};
  std::sort(copies.begin(), copies.end());
  EXPECT_EQ(copies, (std::vector<std::uint64_t>{11, 12}));
  EXPECT_EQ(caught()[0].address, addr);
  EXPECT_TRUE(caught()[0].write);
  EXPECT_TRUE(caught()[0].access_known);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(m.page_readable(i)) << "guards lifted whole, page " << i;
  EXPECT_FALSE(m.page_readable(3)) << "a third copy's guard stays";
  EXPECT_EQ(guard.stats().faults, 2u);
  // The same page again, just after: another thread's fault that raced with
  // the lift is retried, and not recorded twice.
  EXPECT_TRUE(guard.on_fault(addr, Access::Read, nullptr));
  EXPECT_EQ(caught().size(), 2u);
  // An address the guard never protected is not its business.
  int local = 0;
  EXPECT_FALSE(guard.on_fault(reinterpret_cast<std::uint64_t>(&local), Access::Read, nullptr));
  EXPECT_TRUE(guard.on_fault(m.at(3, 1), Access::Unknown, nullptr));
  ASSERT_EQ(caught().size(), 3u);
  EXPECT_FALSE(caught()[2].access_known);
  EXPECT_EQ(guard.pending(), 0u);
}

TEST(CopyGuardScope, StreamsAndTheirOrdering) {
  const SyncScope legacy = scope_of(kLegacyStream, true);
  EXPECT_TRUE(legacy.blocking_too);
  const SyncScope blocking = scope_of(kStreamA, true);
  EXPECT_TRUE(blocking.legacy_too);
  EXPECT_FALSE(blocking.blocking_too);
  const SyncScope non_blocking = scope_of(kStreamA, false);
  EXPECT_FALSE(non_blocking.legacy_too);
  EXPECT_FALSE(non_blocking.blocking_too);
  EXPECT_TRUE(scope_of(per_thread_stream(5), false).legacy_too);
  EXPECT_NE(per_thread_stream(5), per_thread_stream(6));
  EXPECT_EQ(access_of(nullptr), Access::Unknown);
}

// ---- through the recorder's SIGSEGV handler, in a child -------------------

// Runs body in a forked child (which exits with its result); returns the wait status.
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

__attribute__((noinline)) int read_int(const volatile int* p) { return *p; }
__attribute__((noinline)) void write_int(volatile int* p, int v) { *p = v; }

bool in_function(std::uint64_t ip, const void* function) {
  const auto f = reinterpret_cast<std::uint64_t>(function);
  return ip >= f && ip < f + 64;
}

// In the child: records into `path` with the process's guard installed.
bool start_guarded_recording(const std::string& path) {
  rec::Options options;
  options.writer_thread = false;
  return rec::start(path.c_str(), options) && install_copy_guard() && copy_guard() != nullptr;
}

int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status); }

TEST(CopyGuardFault, AReadBeforeTheSyncIsRecordedAndTheProgramGoesOnWithTheData) {
  const std::string path = test::temp_path("guard-read.gdtrace");
  const int status = in_child([&] {
    if (!start_guarded_recording(path)) return 10;
    Pages m(4);
    auto* ints = reinterpret_cast<int*>(m.base);
    const std::size_t per_page = kPage / sizeof(int);
    for (std::size_t i = 0; i < 4 * per_page; ++i) ints[i] = static_cast<int>(i);  // what the copy wrote
    if (!copy_guard()->guard(m.at(0), 4 * kPage, kStreamA, false, 42)) return 11;
    // The read faults, is recorded, and gets the data.
    if (read_int(ints + per_page + 3) != static_cast<int>(per_page + 3)) return 12;
    // The guard is lifted: more reads of the buffer do not fault again.
    long sum = 0;
    for (std::size_t i = 0; i < 4 * per_page; ++i) sum += read_int(ints + i);
    if (sum != static_cast<long>(4 * per_page) * static_cast<long>(4 * per_page - 1) / 2) return 13;
    // A write before the sync is caught too, and lands.
    if (!copy_guard()->guard(m.at(0), 4 * kPage, kStreamA, false, 43)) return 14;
    write_int(ints + 2 * per_page, -7);
    if (ints[2 * per_page] != -7) return 15;
    // Released by its stream's sync: no fault, nothing recorded.
    if (!copy_guard()->guard(m.at(0), 4 * kPage, kStreamA, false, 44)) return 16;
    copy_guard()->release(scope_of(kStreamA, false));
    if (read_int(ints + 5) != 5) return 17;
    if (copy_guard()->stats().faults != 2) return 18;
    rec::stop();
    return 0;
  });
  ASSERT_EQ(exit_status(status), 0);
  const Trace t = read_gdtrace(path);
  ASSERT_EQ(t.host_accesses.size(), 2u);
  const HostAccess& read = t.host_accesses[0];
  EXPECT_EQ(read.guarded_copy, 42u);
  EXPECT_EQ(read.access, AccessKind::Read);
  EXPECT_EQ(read.addr % kPage, 3 * sizeof(int));
  EXPECT_NE(read.tid, 0u);
  ASSERT_NE(read.stack, kNoStack);
  const Stack& stack = t.stack(read.stack);
  ASSERT_FALSE(stack.frames.empty());
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_TRUE(stack.starts_at_fault);
  EXPECT_TRUE(in_function(stack.frames[0].ip, reinterpret_cast<const void*>(&read_int)))
      << "the stack starts at the reading instruction";
#endif
  const HostAccess& write = t.host_accesses[1];
  EXPECT_EQ(write.guarded_copy, 43u);
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_EQ(write.access, AccessKind::Write);
  EXPECT_TRUE(in_function(t.stack(write.stack).frames.at(0).ip, reinterpret_cast<const void*>(&write_int)));
#endif
  EXPECT_TRUE(t.crashes.empty());
}

TEST(CopyGuardFault, AFaultThatIsNotTheGuardsStillKillsTheProgramAsBefore) {
  const std::string path = test::temp_path("guard-segv.gdtrace");
  const int status = in_child([&] {
    if (!start_guarded_recording(path)) return 10;
    Pages m(2);
    if (!copy_guard()->guard(m.at(0), 2 * kPage, kStreamA, false, 42)) return 11;
    // Read-only memory written: SEGV_ACCERR too, at an address the guard does not hold.
    void* ro = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    write_int(static_cast<int*>(ro), 1);
    return 12;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << exit_status(status);
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  const Trace t = read_gdtrace(path);
  EXPECT_EQ(t.crashes.size(), 1u);
  EXPECT_TRUE(t.host_accesses.empty());
}

TEST(CopyGuardFault, AHandlerTheProgramInstallsLaterTakesTheFaultsAwaySoNothingIsGuarded) {
  const int status = in_child([&] {
    if (!start_guarded_recording(test::temp_path("guard-handler.gdtrace"))) return 10;
    if (!rec::fault_filter_reachable()) return 11;
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigaction(SIGSEGV, &sa, nullptr);
    if (rec::fault_filter_reachable()) return 12;
    if (install_copy_guard()) return 13;
    return 0;
  });
  EXPECT_EQ(exit_status(status), 0);
  // Without a recording the filter would never be called.
  EXPECT_FALSE(rec::fault_filter_reachable());
}

}  // namespace
}  // namespace gpudiag::cupti
