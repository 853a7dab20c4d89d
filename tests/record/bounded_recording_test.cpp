// The recorder with a size bound (Options::max_size, GPUDIAG_TRACE_MAX_SIZE):
// its files stay within the bound however long it records, the report
// still finds a leak that began late, and a full disk stops the recording,
// never the program.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
namespace rec = gpudiag::rec;

// One training step's worth of events; from `leak_from` on, the step also
// allocates a buffer it never frees, at a call site of its own.
void record_step(std::uint64_t step, std::uint64_t leak_from) {
  const std::uint64_t addr = 0x10000000 + (step % 8) * 0x10000;
  rec::record(rec::AllocEvent{.addr = addr, .bytes = 4096, .kind = MemKind::Device, .device = 0,
                              .stack = rec::capture_stack()});
  for (std::uint32_t k = 0; k < 6; ++k)
    rec::record(rec::KernelEvent{.name = rec::intern("conv_" + std::to_string(k)), .device = 0, .stream = 7});
  rec::record(rec::FreeEvent{.addr = addr, .kind = MemKind::Device, .device = 0});
  if (step >= leak_from) {
    [[maybe_unused]] volatile int keep_frame = 0;  // a call site of its own
    rec::record(rec::AllocEvent{.addr = 0x40000000 + step * 0x100000, .bytes = 1 << 20, .kind = MemKind::Device,
                                .device = 0, .stack = rec::capture_stack()});
  }
}

TEST(BoundedRecording, StaysWithinItsBoundAndKeepsALateLeakWithItsStack) {
  const std::string path = test::temp_path("bounded-recording.gdtrace");
  rec::Options o;
  o.max_size = 1 << 20;
  o.writer_thread = false;  // flush() below keeps the ring, deterministically
  o.buffer_events = 1024;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  constexpr std::uint64_t kSteps = 60000, kLeakFrom = 58000;
  std::uint64_t largest = 0;
  for (std::uint64_t s = 0; s < kSteps; ++s) {
    record_step(s, kLeakFrom);
    if (s % 500 == 0) {
      rec::flush();
      largest = std::max(largest, test::trace_files_bytes(path));
    }
  }
  rec::stop();
  // Over by at most a segment and the buffers written since the last flush
  // (what is kept, here 2000 leaked buffers, fits in the bound).
  EXPECT_LE(largest, o.max_size + o.max_size / 8 + 256 * 1024);
  EXPECT_LE(test::trace_files_bytes(path), o.max_size + o.max_size / 8 + 256 * 1024);
  const Trace t = read_gdtrace(path);
  EXPECT_TRUE(t.bounded());
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_FALSE(t.truncated) << t.truncation_note;
  EXPECT_LT(t.kernels.size(), kSteps * 6);
  std::size_t leaked = 0;
  StackId leak_stack = kNoStack;
  for (const Alloc& a : t.allocs)
    if (a.addr >= 0x40000000) {
      ++leaked;
      EXPECT_NE(a.stack, kNoStack);
      leak_stack = a.stack;
    }
  EXPECT_EQ(leaked, kSteps - kLeakFrom) << "every leaked buffer, with its stack";
  EXPECT_NE(leak_stack, kNoStack);
}

// The ring drops old segments only when the writer thread maintains it; a
// writer starved of CPU for the whole run, here none, leaves that to the
// stop. Until then the threads that write must still rotate at each
// segment's share, or the stop finds one newest segment larger than the
// bound and has to keep it.
TEST(BoundedRecording, StaysWithinItsBoundWhenOnlyTheStopMaintainsTheRing) {
  const std::string path = test::temp_path("bounded-unmaintained.gdtrace");
  rec::Options o;
  o.max_size = 1 << 20;
  o.writer_thread = false;
  o.compress = false;  // as a thread that waits for a starved writer writes
  o.buffer_events = 1024;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  constexpr std::uint64_t kSteps = 20000;
  for (std::uint64_t s = 0; s < kSteps; ++s) record_step(s, kSteps);
  rec::stop();
  EXPECT_LE(test::trace_files_bytes(path), o.max_size + o.max_size / 8 + 256 * 1024);
  const std::string segment_prefix = fs::path(path).filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
    if (!entry.path().filename().string().starts_with(segment_prefix)) continue;
    EXPECT_LE(entry.file_size(), o.max_size / 8 + 64 * 1024) << entry.path() << ": a segment past its share";
  }
  const Trace t = read_gdtrace(path);
  EXPECT_TRUE(t.bounded());
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_LT(t.kernels.size(), kSteps * 6);
  EXPECT_GT(t.kernels.size(), 500u) << "the newest segment, kept whole, holds the last events";
}

TEST(BoundedRecording, UnderAQuarterOfItsBoundIsOneFileOfVersionTwo) {
  const std::string path = test::temp_path("bounded-short.gdtrace");
  rec::Options o;
  o.max_size = 64 << 20;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  for (std::uint64_t s = 0; s < 100; ++s) record_step(s, 1000);
  rec::stop();
  EXPECT_FALSE(fs::exists(path + ".1"));
  const Trace t = read_gdtrace(path);
  EXPECT_EQ(t.format_version, 2u);
  EXPECT_FALSE(t.bounded());
  EXPECT_EQ(t.kernels.size(), 600u);
}

// A file size limit stands in for a full disk: writes fail with EFBIG.
TEST(BoundedRecording, AFullDiskStopsTheRecordingNotTheProgram) {
  const std::string path = test::temp_path("full-disk.gdtrace");
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the test's choice: a program that ignores it gets EFBIG
    const rlimit limit{256 << 10, 256 << 10};
    setrlimit(RLIMIT_FSIZE, &limit);
    rec::Options o;
    o.buffer_events = 1024;  // chunks smaller than the limit
    if (!rec::start(path.c_str(), o)) _exit(3);
    for (std::uint64_t s = 0; s < 200000; ++s) record_step(s, ~0ull);
    const bool stopped = !rec::enabled();
    rec::stop();
    _exit(stopped ? 0 : 4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the program died";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no start, 4: still recording after the disk filled";
  EXPECT_LE(fs::file_size(path), 256u << 10);
  const Trace t = read_gdtrace(path);
  EXPECT_FALSE(t.kernels.empty()) << "what fitted is still read";
  EXPECT_FALSE(t.stopped_cleanly) << "the recording did not end when the program did";
  EXPECT_FALSE(t.complete());
}

// The next segment is made ready at the start; a short run that crashes
// leaves only its trace file, as an unbounded one would.
TEST(BoundedRecording, ACrashLeavesNoSegmentFileItNeverUsed) {
  const std::string path = test::temp_path("bounded-crash.gdtrace");
  const pid_t pid = fork();
  if (pid == 0) {
    rec::Options o;
    o.max_size = 64 << 20;
    if (!rec::start(path.c_str(), o)) _exit(3);
    if (!fs::exists(path + ".1")) _exit(4);  // made ready
    for (std::uint64_t s = 0; s < 10; ++s) record_step(s, ~0ull);
    std::raise(SIGSEGV);
    _exit(5);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status) << " (3: no start, 4: no segment made ready)";
  EXPECT_FALSE(fs::exists(path + ".1"));
  const Trace t = read_gdtrace(path);
  EXPECT_EQ(t.crashes.size(), 1u);
  EXPECT_EQ(t.kernels.size(), 60u);
}

TEST(BoundedRecording, TheEnvironmentBoundsAForkedChildsTraceToo) {
  const std::string pattern = test::temp_path("bounded-fork-%p.gdtrace");
  rec::Options o;
  o.max_size = 1 << 20;
  o.writer_thread = false;
  ASSERT_TRUE(rec::start(pattern.c_str(), o));
  const pid_t pid = fork();
  if (pid == 0) {
    for (std::uint64_t s = 0; s < 40000; ++s) {
      record_step(s, ~0ull);
      if (s % 500 == 0) rec::flush();
    }
    rec::stop();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  rec::stop();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::string child = pattern;
  child.replace(child.find("%p"), 2, std::to_string(pid));
  EXPECT_LE(test::trace_files_bytes(child), o.max_size + o.max_size / 8 + 256 * 1024);
  EXPECT_TRUE(read_gdtrace(child).bounded());
}

}  // namespace
}  // namespace gpudiag
