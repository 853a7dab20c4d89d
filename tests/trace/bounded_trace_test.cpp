// A trace of bounded size (gpudiag trace --max-size): what the Retainer
// keeps of a dropped segment, and the ring of segment files as the writer
// and the reader see it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_writing.h"
#include "event_codec.h"
#include "gdtrace_format.h"
#include "gpudiag/trace_io.h"
#include "retainer.h"
#include "segment_ring.h"
#include "test_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using gdtrace::RawEvent;
using gdtrace::Retainer;

template <class Event>
RawEvent raw(const Event& e, std::uint32_t tid = 1) {
  RawEvent r = gdtrace::to_raw(gdtrace::encode(e));
  r.tid = tid;
  return r;
}

RawEvent alloc_event(std::uint64_t t, std::uint64_t addr, std::uint32_t stack = 0) {
  return raw(Alloc{.time_ns = t, .addr = addr, .bytes = 256, .kind = MemKind::Device, .device = 0, .stack = stack});
}
RawEvent free_event(std::uint64_t t, std::uint64_t addr) {
  return raw(Free{.time_ns = t, .addr = addr, .kind = MemKind::Device, .device = 0});
}
RawEvent call(std::uint64_t t, std::uint32_t name, std::int32_t status, std::uint32_t stack = 5) {
  ApiCall a;
  a.start_ns = t;
  a.end_ns = t + 1;
  a.name = name;
  a.status = status;
  a.stack = stack;
  return raw(a);
}

std::size_t count_kind(const std::vector<RawEvent>& v, EventKind kind) {
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [&](const RawEvent& e) { return e.kind == static_cast<std::uint8_t>(kind); }));
}

TEST(Retainer, KeepsAnAllocationStillLiveWithItsStackAndDropsOneFreedInTheSegment) {
  Retainer r;
  const std::vector<RawEvent> kept = r.keep_from(std::vector{alloc_event(1, 0x1000, 7), alloc_event(2, 0x2000, 8), free_event(3, 0x2000)});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].p[0], 0x1000u);
  EXPECT_EQ(kept[0].stack, 7u);
  EXPECT_EQ(r.kept_live_allocations(), 1u);
}

TEST(Retainer, KeepsTheFreeOfAnAllocationKeptEarlierSoItDoesNotLookLeaked) {
  Retainer r;
  r.keep_from(std::vector{alloc_event(1, 0x1000)});
  const std::vector<RawEvent> kept = r.keep_from(std::vector{free_event(5, 0x1000), alloc_event(6, 0x3000), free_event(7, 0x3000)});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].kind, static_cast<std::uint8_t>(EventKind::Free));
  EXPECT_EQ(r.kept_live_allocations(), 0u);
}

// Threads' buffers reach the files out of order: a free may be in another
// segment than its allocation, even one before it.
TEST(Retainer, KeepsAnAllocationWhoseFreeWentToAnotherFile) {
  Retainer r;
  const std::vector<RawEvent> kept = r.keep_from(std::vector{alloc_event(1, 0x1000), alloc_event(5, 0x1000), free_event(6, 0x1000)});
  ASSERT_EQ(kept.size(), 1u) << "the first allocation's free is elsewhere: without it, that free is a double free";
  EXPECT_EQ(kept[0].t0, 1u);
}

TEST(Retainer, AtAnOutOfMemoryKeepsEveryAllocationLiveThenEvenIfFreedAfter) {
  Retainer r;
  const std::vector<RawEvent> kept = r.keep_from(std::vector{
      alloc_event(1, 0x1000), raw(OutOfMemory{.time_ns = 2, .requested_bytes = 1 << 20, .device = 0}), free_event(3, 0x1000)});
  EXPECT_EQ(count_kind(kept, EventKind::Alloc), 1u);
  EXPECT_EQ(count_kind(kept, EventKind::OutOfMemory), 1u);
  EXPECT_EQ(count_kind(kept, EventKind::Free), 1u) << "the holder's free, so that it does not look leaked";
}

TEST(Retainer, KeepsErrorsUpToACapPerSiteAndTheCallAfterEach) {
  Retainer r;
  std::vector<RawEvent> events;
  for (std::uint64_t i = 0; i < 40; ++i) {
    events.push_back(call(10 * i, 3, 700));
    events.push_back(call(10 * i + 5, 4, 0, 6));  // its check
  }
  events.push_back(call(1000, 9, 600));  // not ready: not a failure
  const std::vector<RawEvent> kept = r.keep_from(events);
  std::size_t failures = 0, checks = 0;
  for (const RawEvent& e : kept) (e.x == 3 ? failures : checks) += e.x != 9;
  EXPECT_EQ(failures, Retainer::kErrorsPerSite);
  EXPECT_EQ(checks, Retainer::kErrorsPerSite);
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [](const RawEvent& e) { return e.x == 9; }), 1)
      << "a not-ready query is kept only as a first occurrence";
}

TEST(Retainer, KeepsTheFirstOccurrenceOfEachKindAtEachSiteOnlyOnce) {
  Retainer r;
  const auto launch = [](std::uint64_t t, std::uint32_t stack, MemKind kind) {
    return raw(KernelArg{.time_ns = t, .value = 0x10, .index = 1, .memory = kind, .device = 0, .stack = stack});
  };
  const auto first = r.keep_from(std::vector{launch(1, 5, MemKind::Device), launch(2, 5, MemKind::Device),
                                             launch(3, 6, MemKind::Device), launch(4, 5, MemKind::Pageable)});
  EXPECT_EQ(first.size(), 3u) << "one per stack and kind of memory";
  EXPECT_TRUE(r.keep_from(std::vector{launch(9, 5, MemKind::Device)}).empty()) << "seen in an earlier segment";
  const auto counters = r.keep_from(std::vector{raw(MemoryCounter{.time_ns = 3, .device = 0, .allocated_bytes = 1, .reserved_bytes = 2})});
  EXPECT_TRUE(counters.empty());
}

TEST(ParseSize, TakesBinaryUnitsAndRefusesTheRest) {
  EXPECT_EQ(gdtrace::parse_size("64M"), 64ull << 20);
  EXPECT_EQ(gdtrace::parse_size("2G"), 2ull << 30);
  EXPECT_EQ(gdtrace::parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(gdtrace::parse_size("500k"), 500ull << 10);
  EXPECT_EQ(gdtrace::parse_size("4096"), 4096u);
  EXPECT_FALSE(gdtrace::parse_size(""));
  EXPECT_FALSE(gdtrace::parse_size("0"));
  EXPECT_FALSE(gdtrace::parse_size("-1M"));
  EXPECT_FALSE(gdtrace::parse_size("12Q"));
  EXPECT_FALSE(gdtrace::parse_size("99999999999999999999"));
  EXPECT_FALSE(gdtrace::parse_size("20000000000T"));
}

// A chunk appended by hand, as a damaged or hostile file would hold it.
std::string chunk(gdtrace::ChunkType type, const std::string& payload) {
  const gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(type), 0,
                               static_cast<std::uint32_t>(payload.size()), gdtrace::checksum(payload.data(), payload.size())};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

std::string segment_payload(std::uint32_t seq, const std::string& name) {
  return std::string(reinterpret_cast<const char*>(&seq), sizeof seq) + name;
}

// The write that fills a segment moves events on to the next one at once,
// so a recording may stop with its newest segment still empty. The stop
// keeps the last events whole: the segment before that one, even where
// the keep file's definitions (strings, stacks) leave room for little else.
TEST(SegmentRing, TheStopKeepsTheLastEventsWhenTheNewestSegmentIsStillEmpty) {
  const fs::path dir = test::temp_path("ring-stops-after-a-switch");
  fs::create_directories(dir);
  const std::string path = (dir / "run.gdtrace").string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  gdtrace::FileHeader header{};
  std::memcpy(header.magic, gdtrace::kMagic, 8);
  header.version = gdtrace::kSingleFileVersion;
  header.header_size = sizeof header;
  header.pid = 1;
  ASSERT_TRUE(gdtrace::write_all(fd, &header, sizeof header));
  const std::string names = gdtrace::chunk_bytes(gdtrace::ChunkType::String, gdtrace::words(1u), std::string(900 << 10, 'x'));
  ASSERT_TRUE(gdtrace::write_all(fd, names.data(), names.size()));
  constexpr std::uint32_t kPerChunk = 512;
  {
    gdtrace::SegmentRing ring(fd, path, header, 1 << 20);
    ring.took_events();  // past a quarter of the bound already: events go to segments
    std::uint64_t t = 1000;
    for (int switches = 0; switches < 12;) {
      std::vector<RawEvent> events;
      for (std::uint32_t i = 0; i < kPerChunk; ++i, t += 1000)
        events.push_back(raw(Kernel{.start_ns = t, .end_ns = t + 500, .device = 0, .stream = 7}));
      const std::string body(reinterpret_cast<const char*>(events.data()), events.size() * sizeof(RawEvent));
      const std::string c = gdtrace::chunk_bytes(gdtrace::ChunkType::Events, gdtrace::words(1u, kPerChunk), body);
      const int before = ring.events_fd();
      ASSERT_TRUE(gdtrace::write_all(before, c.data(), c.size()));
      ring.took_events();
      if (ring.events_fd() != before) ++switches;
      ASSERT_TRUE(ring.maintain());
    }
    ASSERT_TRUE(ring.maintain(true, true));
    ring.close_files();
  }
  ::close(fd);
  const Trace t = read_gdtrace(path);
  EXPECT_TRUE(t.bounded());
  EXPECT_GE(t.kernels.size(), kPerChunk) << "the newest segment that holds events is kept whole";
}

// 2000 steps of alloc, kernel, free; a buffer leaked at every step from
// step 1500 on.
Trace long_run_with_late_leak(StackId* leak_stack) {
  Trace t;
  const StackId step = testing::stack_named(t, "step", "train.cpp", 10);
  *leak_stack = testing::stack_named(t, "keep_history", "train.cpp", 42);
  for (std::uint64_t s = 0; s < 2000; ++s) {
    const std::uint64_t t0 = 1'000'000 + s * 100'000;
    testing::alloc(t, t0, 0x10000000 + (s % 4) * 0x1000, 4096, 0, step);
    testing::kernel(t, t0 + 10, t0 + 5000, "conv_forward");
    testing::free_at(t, t0 + 6000, 0x10000000 + (s % 4) * 0x1000);
    if (s >= 1500) testing::alloc(t, t0 + 7000, 0x20000000 + s * 0x1000, 1 << 20, 0, *leak_stack);
  }
  return t;
}

TEST(BoundedTrace, StaysWithinItsBoundAndKeepsALateLeakWithItsStack) {
  StackId leak_stack = 0;
  const Trace full = long_run_with_late_leak(&leak_stack);
  const fs::path dir = test::temp_path("bounded-late-leak");
  fs::create_directories(dir);
  const std::string whole = (dir / "whole.gdtrace").string(), bounded = (dir / "bounded.gdtrace").string();
  write_gdtrace(full, whole);
  const std::uint64_t bound = fs::file_size(whole) / 10;
  write_gdtrace(full, bounded, bound);
  // Over by at most the one segment being written.
  EXPECT_LE(test::trace_files_bytes(bounded), bound + bound / 8 + 64 * 1024) << "bound " << bound;
  const Trace read = read_gdtrace(bounded);
  EXPECT_EQ(read.format_version, 3u);
  EXPECT_TRUE(read.bounded());
  EXPECT_GT(read.detail_from_ns, full.kernels.front().start_ns);
  EXPECT_LT(read.kernels.size(), full.kernels.size());
  EXPECT_FALSE(read.truncated) << read.truncation_note;
  EXPECT_TRUE(read.stopped_cleanly);
  // Every leaked buffer is there, with the stack it was allocated at.
  std::size_t leaked = 0;
  for (const Alloc& a : read.allocs)
    if (a.addr >= 0x20000000) {
      ++leaked;
      ASSERT_NE(a.stack, kNoStack);
      EXPECT_EQ(read.stack(a.stack).frames.at(0).ip, full.stack(leak_stack).frames.at(0).ip);
    }
  EXPECT_EQ(leaked, 500u);
  // No buffer of the steps looks leaked: each allocation kept has its free.
  std::map<std::uint64_t, int> live;
  for (const Alloc& a : read.allocs)
    if (a.addr < 0x20000000) ++live[a.addr];
  for (const Free& f : read.frees) --live[f.addr];
  for (const auto& [addr, n] : live) EXPECT_LE(n, 0) << std::hex << addr;
}

TEST(BoundedTrace, UnderAQuarterOfItsBoundIsTheUnboundedFileByteForByte) {
  StackId leak_stack = 0;
  const Trace full = long_run_with_late_leak(&leak_stack);
  const fs::path dir = test::temp_path("bounded-small");
  fs::create_directories(dir);
  const std::string whole = (dir / "whole.gdtrace").string(), bounded = (dir / "bounded.gdtrace").string();
  write_gdtrace(full, whole);
  write_gdtrace(full, bounded, fs::file_size(whole) * 4 + 4096);
  EXPECT_EQ(read_file(whole), read_file(bounded));
  EXPECT_FALSE(fs::exists(bounded + ".1"));
}

// The late-leak run bounded at 32 KiB in a folder of its own: its trace
// file, and its live segment files in the order they were written.
struct BoundedFiles {
  std::string trace;
  std::vector<fs::path> segments;
};

BoundedFiles write_bounded_late_leak(const std::string& name) {
  StackId leak_stack = 0;
  const fs::path dir = test::temp_path(name);
  fs::create_directories(dir);
  BoundedFiles files{(dir / "bounded.gdtrace").string(), {}};
  write_gdtrace(long_run_with_late_leak(&leak_stack), files.trace, 32 << 10);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() != ".gdtrace") files.segments.push_back(e.path());
  std::sort(files.segments.begin(), files.segments.end(), [](const fs::path& a, const fs::path& b) {
    return std::stoul(a.extension().string().substr(1)) < std::stoul(b.extension().string().substr(1));
  });
  return files;
}

TEST(BoundedTrace, ALostSegmentIsDamageNotSilence) {
  const BoundedFiles files = write_bounded_late_leak("bounded-lost-segment");
  ASSERT_GE(files.segments.size(), 2u);
  fs::remove(files.segments.back());
  const Trace read = read_gdtrace(files.trace);
  EXPECT_TRUE(read.truncated);
  EXPECT_NE(read.truncation_note.find("is missing"), std::string::npos) << read.truncation_note;
}

// The trace files of a run whose segment is replaced by another run's, or
// named twice: damage, and the trace judged only up to before it.
TEST(BoundedTrace, ASegmentOfAnotherRecordingOrNamedTwiceIsDamage) {
  const BoundedFiles files = write_bounded_late_leak("bounded-foreign");
  ASSERT_GE(files.segments.size(), 2u);
  const fs::path& newest = files.segments.back();
  std::string bytes = test::read_file(newest.string());
  const std::string original = bytes;
  bytes[16] ^= 1;  // another pid
  test::write_file(newest.string(), bytes);
  Trace read = read_gdtrace(files.trace);
  EXPECT_TRUE(read.corrupt_chunk);
  EXPECT_NE(read.truncation_note.find("of another recording"), std::string::npos) << read.truncation_note;
  EXPECT_FALSE(read.complete()) << "judged only up to before the segment";
  test::write_file(newest.string(), original);
  const std::string keep = test::read_file(files.trace);
  test::write_file(files.trace, keep + chunk(gdtrace::ChunkType::Segment, segment_payload(999, newest.filename().string())));
  read = read_gdtrace(files.trace);
  EXPECT_NE(read.truncation_note.find("named twice"), std::string::npos) << read.truncation_note;
}

TEST(BoundedTrace, AKeepFileWhoseSegmentIsCutShortReadsUpToTheCut) {
  const BoundedFiles files = write_bounded_late_leak("bounded-cut-segment");
  ASSERT_FALSE(files.segments.empty());
  const fs::path& newest = files.segments.back();
  fs::resize_file(newest, fs::file_size(newest) - 5);
  const Trace read = read_gdtrace(files.trace);
  EXPECT_TRUE(read.truncated);
  EXPECT_NE(read.truncation_note.find(newest.filename().string()), std::string::npos) << read.truncation_note;
  EXPECT_FALSE(read.kernels.empty());
}

TEST(BoundedTrace, ASegmentNamedOutsideItsFolderOrAsTheFileItselfIsDamage) {
  Trace t;
  testing::kernel(t, 10, 20, "k");
  const fs::path dir = test::temp_path("bounded-hostile");
  fs::create_directories(dir);
  const std::string path = (dir / "t.gdtrace").string();
  write_gdtrace(t, path);
  const std::string whole = test::read_file(path);
  for (const std::string& name : {std::string("../t.gdtrace"), std::string("t.gdtrace"), std::string(".."), std::string("none")}) {
    test::write_file(path, whole + chunk(gdtrace::ChunkType::Segment, segment_payload(1, name)));
    const Trace read = read_gdtrace(path);
    EXPECT_TRUE(read.truncated) << name;
    EXPECT_TRUE(read.corrupt_chunk) << name;
    EXPECT_EQ(read.kernels.size(), 1u) << name << ": what came before is read";
  }
}

}  // namespace
}  // namespace gpudiag
