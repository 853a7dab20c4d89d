// What `gpudiag trace` says while the command runs (cli/live_findings.h), fed
// chunks as a recorder writes them: each of the five problems gives one
// line, a healthy recording none, and a chunk not yet whole waits.
#include "live_findings.h"

#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "chunk_payloads.h"
#include "event_codec.h"
#include "gdtrace_format.h"
#include "gpudiag/api_kinds.h"

namespace gpudiag::cli {
namespace {

using gdtrace::ChunkType;

constexpr std::int64_t kPid = 4242;

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string header(std::uint64_t pid = kPid) {
  gdtrace::FileHeader h{};
  std::memcpy(h.magic, gdtrace::kMagic, 8);
  h.version = gdtrace::kVersion;
  h.header_size = sizeof h;
  h.pid = pid;
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

// A chunk as the recorder frames it.
std::string framed(ChunkType type, const std::string& payload) {
  gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(type), 0,
                         static_cast<std::uint32_t>(payload.size()), gdtrace::checksum(payload.data(), payload.size())};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

template <class... Events>
std::string events(const Events&... e) {
  std::string out;
  put<std::uint32_t>(out, 7);  // thread
  put<std::uint32_t>(out, sizeof...(e));
  (put(out, gdtrace::to_raw(gdtrace::encode(e))), ...);
  return out;
}

std::string drained(std::uint64_t time) {
  std::string out;
  put(out, time);
  return out;
}

std::string string_chunk(std::uint32_t id, const std::string& text) {
  std::string out;
  put(out, id);
  return out + text;
}

std::string stack_chunk(std::uint32_t id, const std::vector<std::uint64_t>& frames) {
  std::string out;
  put(out, id);
  put(out, static_cast<std::uint32_t>(frames.size()));
  for (const auto f : frames) put(out, f);
  return out;
}

std::string fault(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint16_t flags = 0) {
  std::string out;
  put(out, a), put(out, b), put(out, c);
  put<std::uint32_t>(out, 7);
  put<std::uint16_t>(out, 0);  // no frames
  put(out, flags);
  return out;
}

// Everything the lines of these chunks say, fed to one LiveFindings.
struct Fed {
  LiveFindings live;
  std::vector<std::string> lines;
  Fed& operator()(ChunkType type, const std::string& payload, std::int64_t pid = kPid) {
    for (auto& l : live.chunk(pid, static_cast<std::uint16_t>(type), payload)) lines.push_back(std::move(l));
    return *this;
  }
  Fed& finish() {
    for (auto& l : live.finish()) lines.push_back(std::move(l));
    return *this;
  }
};

constexpr std::uint64_t kBlock = 0x7000'0000;

Alloc device_alloc(std::uint64_t t, std::uint64_t addr = kBlock) {
  return {.time_ns = t, .addr = addr, .bytes = 4096, .kind = MemKind::Device, .device = 0};
}
Free device_free(std::uint64_t t, std::uint64_t addr = kBlock) {
  return {.time_ns = t, .addr = addr, .bytes = 4096, .kind = MemKind::Device, .device = 0};
}
KernelArg arg(std::uint64_t t, std::uint64_t value) {
  return {.time_ns = t, .value = value, .index = 2, .memory = MemKind::Device, .device = 0, .correlation = 9};
}

TEST(LiveFindings, AGuardedEarlyReadIsGD003) {
  Fed fed;
  fed(ChunkType::GuardedAccess, fault(100, 0xabc000, 33));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD003 unsynced-transfer: host read at 0xabc000")) << fed.lines[0];
}

TEST(LiveFindings, AKernelArgumentIntoFreedMemoryIsGD004OnceTheFreeIsKnownToComeFirst) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "_Z5scalePfi"));
  fed(ChunkType::Events, events(ApiCall{.start_ns = 300, .end_ns = 300, .name = 1, .correlation = 9, .symbol = 1},
                                arg(300, kBlock + 16)));
  fed(ChunkType::Events, events(device_alloc(100), device_free(200)));
  EXPECT_TRUE(fed.lines.empty()) << "judged before the recorder said every thread's events up to then are in";
  fed(ChunkType::Drained, drained(400));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD004 premature-free: scale(float*, int) was given as parameter 2 "
                                       "the address 0x70000010, inside 4.00 KiB at 0x70000000 that was freed"))
      << fed.lines[0];
}

TEST(LiveFindings, MemoryAllocatedAgainBeforeTheLaunchIsNotFreed) {
  Fed fed;
  fed(ChunkType::Events, events(device_alloc(100), device_free(200), device_alloc(250, kBlock + 1024), arg(300, kBlock + 1024)));
  fed(ChunkType::Drained, drained(400)).finish();
  EXPECT_TRUE(fed.lines.empty()) << fed.lines.front();
}

TEST(LiveFindings, WhatNoDrainedMarkerCoveredIsJudgedAtTheEnd) {
  Fed fed;
  fed(ChunkType::Events, events(device_alloc(100), device_free(200), arg(300, kBlock)));
  EXPECT_TRUE(fed.lines.empty());
  fed.finish();
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD004 premature-free: a kernel was given")) << fed.lines[0];
}

TEST(LiveFindings, AProcessReadFromTwoFilesKeepsOneState) {
  // A process whose events continue in a further file: its chunks come from
  // two tails, under the one pid.
  GdtraceTail first, second;
  first.append(header() + framed(ChunkType::Events, events(device_alloc(100), device_free(200))));
  second.append(header() + framed(ChunkType::Events, events(arg(300, kBlock))) +
                framed(ChunkType::Drained, drained(400)));
  Fed fed;
  for (GdtraceTail* tail : {&first, &second})
    for (GdtraceTail::Chunk c; tail->next(c);) fed(static_cast<ChunkType>(c.type), std::string(c.payload), tail->pid());
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD004 premature-free:")) << fed.lines[0];
}

TEST(LiveFindings, AnOutOfMemoryIsGD008) {
  Fed fed;
  fed(ChunkType::Events, events(OutOfMemory{.time_ns = 5, .requested_bytes = 3u << 20, .free_bytes = 1u << 20,
                                            .capacity_bytes = 32u << 20, .device = 0}));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_EQ(fed.lines[0],
            "gpudiag: GD008 out-of-memory: out of memory on device 0: a request for 3.00 MiB failed with 1.00 MiB free "
            "of 32.0 MiB");
}

// A segment can be dropped before the watch opens it (a slow watch, a busy
// recorder): what the recorder kept of it still says its errors, and its
// sample of allocations and launches judges nothing.
TEST(LiveFindings, WhatABoundedRecordingKeptOfADroppedSegmentSaysItsErrorsOnly) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "_Z5scalePfi"));
  fed(ChunkType::Retained,
      events(device_alloc(100), device_free(200),
             ApiCall{.start_ns = 300, .end_ns = 300, .name = 1, .correlation = 9, .symbol = 1}, arg(300, kBlock + 16),
             OutOfMemory{.time_ns = 400, .requested_bytes = 3u << 20, .device = 0}));
  fed(ChunkType::Drained, drained(500)).finish();
  ASSERT_EQ(fed.lines.size(), 1u) << fed.lines.back();
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD008 out-of-memory: out of memory on device 0")) << fed.lines[0];
}

TEST(LiveFindings, DeflatedEventsAreInflated) {
  const std::string plain = events(OutOfMemory{.time_ns = 5, .requested_bytes = 64, .device = 0},
                                   OutOfMemory{.time_ns = 6, .requested_bytes = 64, .device = 0});
  gdtrace::Deflater deflater(2);
  const std::size_t size = deflater.compress(plain.data() + 8, plain.size() - 8);
  ASSERT_GT(size, 0u);
  Fed fed;
  fed(ChunkType::DeflatedEvents, plain.substr(0, 8) + std::string(deflater.out(), size));
  ASSERT_EQ(fed.lines.size(), 1u) << "the same problem at the same place is said once";
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD008 out-of-memory: out of memory on device 0")) << fed.lines[0];
}

TEST(LiveFindings, ACrashIsSaidAsReportsWordIt) {
  std::string crash;
  put<std::int32_t>(crash, SIGSEGV);
  put<std::int32_t>(crash, SEGV_MAPERR);
  crash += fault(0, 0x10, 77).substr(8);  // address 0x10, time 77, thread 7, no frames
  Fed fed;
  fed(ChunkType::Crash, crash);
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_EQ(fed.lines[0], "gpudiag: the program crashed: SIGSEGV (address not mapped at 0x10) on thread 7");
}

TEST(LiveFindings, ACallThatReturnedAnErrorIsGD006) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "cudaMemcpyAsync"));
  fed(ChunkType::Events, events(ApiCall{.start_ns = 1, .end_ns = 2, .name = 1, .status = 1}));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD006 unchecked-cuda-error: cudaMemcpyAsync returned error 1"))
      << fed.lines[0];
}

TEST(LiveFindings, AnAllocationCallThatRanOutOfMemoryIsGD008) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "cudaMalloc"));
  fed(ChunkType::Events, events(ApiCall{.start_ns = 1, .end_ns = 2, .name = 1, .status = kCudaOutOfMemory}));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_TRUE(fed.lines[0].starts_with("gpudiag: GD008 out-of-memory: cudaMalloc returned error 2")) << fed.lines[0];
}

TEST(LiveFindings, AnErrorReportedAgainByCudaGetLastErrorIsNotSaidTwice) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "cudaGetLastError"));
  fed(ChunkType::Events, events(ApiCall{.start_ns = 1, .end_ns = 2, .name = 1, .status = 700}));
  EXPECT_TRUE(fed.lines.empty()) << fed.lines.front();
}

TEST(LiveFindings, AHealthyRecordingSaysNothing) {
  Fed fed;
  fed(ChunkType::String, string_chunk(1, "cudaStreamQuery"));
  fed(ChunkType::String, string_chunk(2, "cudaLaunchKernel"));
  fed(ChunkType::Stack, stack_chunk(1, {0x1234}));
  fed(ChunkType::Events, events(device_alloc(100), arg(150, kBlock + 8), device_free(200),
                                ApiCall{.start_ns = 210, .end_ns = 211, .name = 1, .status = kCudaNotReady},
                                ApiCall{.start_ns = 220, .end_ns = 221, .name = 2, .status = 0, .stack = 1},
                                device_alloc(300), arg(310, kBlock)));
  fed(ChunkType::Drained, drained(1000)).finish();
  EXPECT_TRUE(fed.lines.empty()) << fed.lines.front();
}

// A return address in this file, for a stack the symbolizer can resolve.
[[gnu::noinline]] std::uint64_t return_address() {
  return reinterpret_cast<std::uint64_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
}

// The Module chunk of the test program itself, as the recorder writes it.
std::string this_module() {
  struct Found {
    std::uint64_t base = 0, low = ~std::uint64_t{0}, high = 0;
  } found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& f = *static_cast<Found*>(data);
        f.base = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            f.low = std::min<std::uint64_t>(f.low, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            f.high = std::max<std::uint64_t>(f.high, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
          }
        return 1;  // the first is the program
      },
      &found);
  std::string out;
  put(out, found.base), put(out, found.low), put(out, found.high - found.low);
  return out + std::filesystem::read_symlink("/proc/self/exe").string();
}

TEST(LiveFindings, TheLineSaysWhereAsTheReportDoes) {
  Fed fed;
  fed(ChunkType::Module, this_module());
  fed(ChunkType::Stack, stack_chunk(3, {return_address()}));
  fed(ChunkType::Events, events(OutOfMemory{.time_ns = 5, .requested_bytes = 64, .device = 0, .stack = 3}));
  ASSERT_EQ(fed.lines.size(), 1u);
  EXPECT_NE(fed.lines[0].find(" at gpudiag::cli::(anonymous namespace)::LiveFindings_TheLineSaysWhereAsTheReportDoes_Test"),
            std::string::npos)
      << fed.lines[0];
  EXPECT_NE(fed.lines[0].find("live_findings_test.cpp:"), std::string::npos) << fed.lines[0];
}

TEST(GdtraceTail, AChunkIsHandedOutOnlyWhenWhole) {
  const std::string oom = framed(ChunkType::Events, events(OutOfMemory{.time_ns = 5, .device = 0}));
  const std::string bytes = header() + oom + oom.substr(0, oom.size() - 1);  // the second cut short
  GdtraceTail tail;
  std::size_t whole = 0;
  for (const char byte : bytes) {
    tail.append(std::string_view(&byte, 1));
    for (GdtraceTail::Chunk c; tail.next(c);) ++whole;
  }
  EXPECT_EQ(whole, 1u);
  EXPECT_EQ(tail.pid(), kPid);
  EXPECT_FALSE(tail.stopped()) << "a chunk cut short is not damage: the rest may come";
  tail.append(oom.substr(oom.size() - 1));
  GdtraceTail::Chunk c;
  EXPECT_TRUE(tail.next(c));
  EXPECT_EQ(c.type, static_cast<std::uint16_t>(ChunkType::Events));
}

TEST(GdtraceTail, AChunkCutShortAtTheEndIsNeverReported) {
  std::string oom = framed(ChunkType::Events, events(OutOfMemory{.time_ns = 5, .device = 0}));
  GdtraceTail tail;
  tail.append(header() + oom.substr(0, oom.size() - 3));
  Fed fed;
  for (GdtraceTail::Chunk c; tail.next(c);) fed(static_cast<ChunkType>(c.type), std::string(c.payload));
  fed.finish();
  EXPECT_TRUE(fed.lines.empty()) << fed.lines.front();
  EXPECT_FALSE(tail.stopped());
}

TEST(GdtraceTail, ADamagedChunkStopsTheTail) {
  std::string oom = framed(ChunkType::Events, events(OutOfMemory{.time_ns = 5, .device = 0}));
  oom.back() ^= 1;  // its checksum no longer matches
  GdtraceTail tail;
  tail.append(header() + oom);
  GdtraceTail::Chunk c;
  EXPECT_FALSE(tail.next(c));
  EXPECT_TRUE(tail.stopped());
}

TEST(GdtraceTail, AFileThatIsNoTraceStopsTheTail) {
  GdtraceTail tail;
  tail.append("not a trace at all, and longer than a header");
  GdtraceTail::Chunk c;
  EXPECT_FALSE(tail.next(c));
  EXPECT_TRUE(tail.stopped());
}

}  // namespace
}  // namespace gpudiag::cli
