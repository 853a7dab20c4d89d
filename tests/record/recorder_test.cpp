// The in-process recorder: every event kind round-trips through a .gdtrace
// file with its fields, strings and stacks resolve, memory stays bounded and
// drops are counted, threads record without losing events.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "gdtrace_image.h"
#include "gdtrace_format.h"
#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace rec = gpudiag::rec;

TEST(Recorder, DisabledRecordsNothingAndReturnsZeroIds) {
  ASSERT_FALSE(rec::enabled());
  rec::emit(rec::AllocEvent{.addr = 1, .bytes = 2});
  EXPECT_EQ(rec::intern("kernel"), 0u);
  EXPECT_EQ(rec::capture_stack(), 0u);
  EXPECT_STREQ(rec::trace_path(), "");
}

TEST(Recorder, EveryEventKindRoundTrips) {
  const std::string path = test::temp_path("kinds-%p.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  EXPECT_TRUE(rec::enabled());
  const std::string actual = rec::trace_path();
  EXPECT_EQ(actual.find("%p"), std::string::npos) << "the pid replaces %p";
  EXPECT_FALSE(rec::start(path.c_str())) << "a second start while recording fails";

  const auto k = rec::intern("gemm_kernel<float>");
  EXPECT_EQ(rec::intern("gemm_kernel<float>"), k) << "interning is stable";
  rec::record(rec::DeviceInfo{.id = 0, .name = rec::intern("emu0"), .memory_bytes = 1 << 30});
  rec::record(rec::StreamInfo{.device = 0, .id = 7, .name = rec::intern("compute"), .handle = 0x1234, .handle_known = true});
  rec::record(rec::AllocEvent{.time_ns = 100, .addr = 0x1000, .bytes = 4096, .kind = MemKind::Device, .device = 0, .stream = 7, .correlation = 3});
  rec::record(rec::FreeEvent{.time_ns = 900, .addr = 0x1000, .bytes = 4096, .kind = MemKind::Device, .device = 0});
  rec::record(rec::MemcpyEvent{.start_ns = 200, .end_ns = 250, .dst = 0x1000, .src = 0x7f00, .bytes = 64,
                               .src_kind = MemKind::Pageable, .dst_kind = MemKind::Device, .async = true, .device = 0, .stream = 7});
  rec::record(rec::MemsetEvent{.start_ns = 260, .end_ns = 270, .addr = 0x1000, .bytes = 32, .value = 0xab, .kind = MemKind::Device, .device = 0});
  rec::record(rec::KernelEvent{.start_ns = 300, .end_ns = 400, .name = k, .grid = {4, 2, 1}, .block = {256, 1, 1},
                               .shared_bytes = 1024, .device = 0, .stream = 7, .correlation = 9});
  rec::record(rec::SyncEvent{.start_ns = 410, .end_ns = 500, .kind = SyncKind::Stream, .device = 0, .stream = 7});
  rec::record(rec::ApiEvent{.start_ns = 290, .end_ns = 295, .name = rec::intern("cudaLaunchKernel"), .domain = ApiDomain::Runtime,
                            .status = 2, .device = 0, .correlation = 9, .symbol = rec::intern("scale(float*, int)")});
  rec::record(rec::ApiEvent{.start_ns = 296, .end_ns = 297, .name = rec::intern("cudaFree"), .domain = ApiDomain::Runtime,
                            .device = 0, .tid = 4242, .correlation = 10});
  rec::record(rec::HostAccessEvent{.time_ns = 510, .addr = 0x1000, .bytes = 4, .access = AccessKind::Write, .device = 0});
  rec::record(rec::OutOfMemoryEvent{.time_ns = 520, .requested_bytes = 1ull << 40, .free_bytes = 10, .capacity_bytes = 1 << 30, .device = 0});
  rec::record(rec::FindingEvent{.time_ns = 530, .rule_id = rec::intern("GD001"), .message = rec::intern("mixed devices")});
  rec::record(rec::RangeEvent{.start_ns = 540, .end_ns = 560, .name = rec::intern("step 3")});
  rec::record(rec::KernelArgEvent{.time_ns = 298, .value = 0x7f0012345678, .index = 2, .memory = MemKind::Pageable,
                                  .device = 0, .stream = 7, .correlation = 9});
  rec::stop();
  EXPECT_FALSE(rec::enabled());

  Trace t = read_gdtrace(actual);
  EXPECT_EQ(t.source, TraceSource::Gdtrace);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.pid, getpid());
  EXPECT_NE(t.command.find("record_test"), std::string::npos);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.str(t.devices[0].name), "emu0");
  EXPECT_EQ(t.devices[0].memory_bytes, 1u << 30);
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.str(t.streams[0].name), "compute");
  EXPECT_EQ(t.streams[0].handle, 0x1234u);
  EXPECT_TRUE(t.streams[0].handle_known);
  ASSERT_EQ(t.allocs.size(), 1u);
  EXPECT_EQ(t.allocs[0].addr, 0x1000u);
  EXPECT_EQ(t.allocs[0].stream, 7u);
  EXPECT_EQ(t.allocs[0].correlation, 3u);
  EXPECT_EQ(t.allocs[0].tid, t.frees.at(0).tid);
  EXPECT_NE(t.allocs[0].tid, 0u);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].copy, CopyKind::HtoD) << "derived from the memory kinds";
  EXPECT_EQ(t.memcpys[0].src_kind, MemKind::Pageable);
  EXPECT_TRUE(t.memcpys[0].async);
  EXPECT_EQ(t.memcpys[0].end_ns, 250u);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].value, 0xabu);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.str(t.kernels[0].name), "gemm_kernel<float>");
  EXPECT_EQ(t.kernels[0].grid[0], 4u);
  EXPECT_EQ(t.kernels[0].grid[1], 2u);
  EXPECT_EQ(t.kernels[0].block[0], 256u);
  EXPECT_EQ(t.kernels[0].shared_bytes, 1024u);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs[0].kind, SyncKind::Stream);
  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.str(t.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(t.api_calls[0].status, 2);
  EXPECT_EQ(t.api_calls[0].domain, ApiDomain::Runtime);
  EXPECT_EQ(t.str(t.api_calls[0].symbol), "scale(float*, int)") << "the kernel the launch call launched";
  EXPECT_EQ(t.api_calls[1].symbol, 0u);
  EXPECT_EQ(t.api_calls[0].tid, t.allocs[0].tid) << "recorded on its own thread";
  EXPECT_EQ(t.api_calls[1].tid, 4242u) << "recorded on behalf of thread 4242";
  ASSERT_EQ(t.host_accesses.size(), 1u);
  EXPECT_EQ(t.host_accesses[0].access, AccessKind::Write);
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].requested_bytes, 1ull << 40);
  ASSERT_EQ(t.findings.size(), 1u);
  EXPECT_EQ(t.str(t.findings[0].rule_id), "GD001");
  EXPECT_EQ(t.str(t.findings[0].message), "mixed devices");
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.str(t.ranges[0].name), "step 3");
  EXPECT_EQ(t.ranges[0].end_ns, 560u);
  ASSERT_EQ(t.kernel_args.size(), 1u);
  EXPECT_EQ(t.kernel_args[0].value, 0x7f0012345678u);
  EXPECT_EQ(t.kernel_args[0].index, 2u);
  EXPECT_EQ(t.kernel_args[0].memory, MemKind::Pageable);
  EXPECT_EQ(t.kernel_args[0].stream, 7u);
  EXPECT_EQ(t.kernel_args[0].correlation, 9u);
  EXPECT_EQ(t.kernel_args[0].tid, t.allocs[0].tid);
  EXPECT_EQ(t.begin_ns(), 100u);
  EXPECT_EQ(t.end_ns(), 900u);
}

__attribute__((noinline)) rec::StackId allocate_with_stack() {
  rec::StackId s = rec::capture_stack();
  rec::record(rec::AllocEvent{.addr = 1, .bytes = 1, .stack = s});
  return s;
}

TEST(Recorder, StacksAreInternedAndSymbolized) {
  const std::string path = test::temp_path("stacks.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  ASSERT_TRUE(rec::stacks_enabled());
  rec::StackId ids[2];
  volatile int n = 2;  // a real loop, so both calls share one call site
  for (int i = 0; i < n; ++i) ids[i] = allocate_with_stack();
  const rec::StackId a = ids[0], b = ids[1];
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a, b) << "the same call site gives the same stack id";
  rec::stop();

  Trace t = read_gdtrace(path);
  ASSERT_EQ(t.allocs.size(), 2u);
  const Stack& s = t.stack(t.allocs[0].stack);
  ASSERT_GE(s.frames.size(), 2u);
  EXPECT_FALSE(t.modules.empty());
  EXPECT_GE(s.frames[0].module, 0) << "the innermost frame lies in a recorded module";
  EXPECT_GT(symbolize(t), 0u);
  const Stack& named = t.stack(t.allocs[0].stack);
  bool found = false;
  for (const auto& f : named.frames) found |= t.str(f.function).find("allocate_with_stack") != std::string_view::npos;
  EXPECT_TRUE(found) << "innermost function: " << t.str(named.frames[0].function);
}

// file:line comes from DWARF, except in modules over the size limit, which
// keep their function names and are listed so the report can say so.
TEST(Recorder, SymbolizedFramesHaveLinesUnlessTheirModuleIsTooLarge) {
  const std::string path = test::temp_path("lines.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  (void)allocate_with_stack();
  rec::stop();
  const auto innermost_named = [](const Trace& t) -> const StackFrame* {
    for (const auto& f : t.stack(t.allocs[0].stack).frames)
      if (t.str(f.function).find("allocate_with_stack") != std::string_view::npos) return &f;
    return nullptr;
  };
  Trace with_lines = read_gdtrace(path);
  symbolize(with_lines);
  const StackFrame* f = innermost_named(with_lines);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(with_lines.str(f->file).find("recorder_test.cpp"), std::string_view::npos) << with_lines.str(f->file);
  EXPECT_GT(f->line, 0u);
  EXPECT_TRUE(with_lines.modules_without_lines.empty());

  Trace limited = read_gdtrace(path);
  symbolize(limited, {.max_module_bytes_for_lines = 1024});
  f = innermost_named(limited);
  ASSERT_NE(f, nullptr) << "names still come from the symbol table";
  EXPECT_EQ(f->line, 0u);
  EXPECT_TRUE(limited.str(f->file).empty());
  ASSERT_FALSE(limited.modules_without_lines.empty());
}

__attribute__((noinline)) rec::StackId stack_from_site_b() {
  rec::StackId s = rec::capture_stack();
  asm volatile("");  // keep the call from becoming a tail call
  return s;
}

// capture_stack() remembers recent stacks per thread: another call site must
// still get another id, and a later recording ids its own file defines.
TEST(Recorder, StackIdsDifferByCallSiteAndRecording) {
  const std::string first = test::temp_path("stacks1.gdtrace"), second = test::temp_path("stacks2.gdtrace");
  ASSERT_TRUE(rec::start(first.c_str()));
  const rec::StackId a = allocate_with_stack();
  const rec::StackId b = stack_from_site_b();
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  rec::stop();
  ASSERT_TRUE(rec::start(second.c_str()));
  (void)stack_from_site_b();  // takes id 1 in this recording
  const rec::StackId again = allocate_with_stack();
  rec::stop();
  Trace t = read_gdtrace(second);
  ASSERT_EQ(t.allocs.size(), 1u);
  EXPECT_NE(again, 0u);
  EXPECT_NE(t.allocs[0].stack, 0u) << "the id resolves in this recording's file";
  symbolize(t);
  bool found = false;
  for (const auto& f : t.stack(t.allocs[0].stack).frames) found |= t.str(f.function).find("allocate_with_stack") != std::string_view::npos;
  EXPECT_TRUE(found) << "the stack of the second recording is allocate_with_stack's";
}

TEST(Recorder, StacksOffGiveNoStack) {
  const std::string path = test::temp_path("nostacks.gdtrace");
  rec::Options o;
  o.stacks = false;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  EXPECT_EQ(rec::capture_stack(), 0u);
  rec::stop();
}

TEST(Recorder, ExhaustedPoolDropsAndCountsInsteadOfGrowing) {
  const std::string path = test::temp_path("drops.gdtrace");
  rec::Options o;
  o.buffer_events = 16;
  o.buffer_count = 2;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  // Two threads hold the only two buffers; a third finds none and must drop.
  std::mutex m;
  std::condition_variable cv;
  int holding = 0;
  bool release = false;
  auto holder = [&](std::uint64_t addr) {
    rec::record(rec::FreeEvent{.addr = addr});
    std::unique_lock<std::mutex> lock(m);
    ++holding;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  std::thread a(holder, 1), b(holder, 2);
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return holding == 2; });
  }
  for (int i = 0; i < 10; ++i) rec::record(rec::FreeEvent{.addr = 100u + i});
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  a.join();
  b.join();
  rec::add_dropped(5);  // e.g. CUPTI's own count
  rec::stop();
  Trace t = read_gdtrace(path);
  EXPECT_EQ(t.frees.size(), 2u);
  EXPECT_EQ(t.dropped_events, 10u + 5u);
}

TEST(Recorder, WithoutWriterThreadFullBuffersAreWrittenByTheirOwner) {
  const std::string path = test::temp_path("nowriter.gdtrace");
  rec::Options o;
  o.buffer_events = 16;
  o.buffer_count = 2;
  o.writer_thread = false;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  for (int i = 0; i < 1000; ++i) rec::record(rec::FreeEvent{.addr = static_cast<std::uint64_t>(i)});
  rec::stop();
  Trace t = read_gdtrace(path);
  EXPECT_EQ(t.frees.size(), 1000u) << "a 2-buffer pool is enough: buffers are recycled";
  EXPECT_EQ(t.dropped_events, 0u);
}

TEST(Recorder, ThreadsRecordConcurrentlyWithoutLoss) {
  const std::string path = test::temp_path("threads.gdtrace");
  rec::Options o;
  o.buffer_events = 1024;
  o.buffer_count = 96;  // room for every event: none may be dropped
  o.flush_interval_ms = 1;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  constexpr int kThreads = 4, kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i)
        rec::record(rec::AllocEvent{.addr = static_cast<std::uint64_t>(t) * kPerThread + i + 1, .bytes = 1});
    });
  for (auto& th : threads) th.join();
  rec::stop();
  Trace t = read_gdtrace(path);
  std::set<std::uint64_t> addrs;
  for (const auto& a : t.allocs) addrs.insert(a.addr);
  EXPECT_EQ(addrs.size(), t.allocs.size()) << "no event written twice";
  EXPECT_EQ(t.allocs.size(), std::size_t{kThreads} * kPerThread);
  EXPECT_EQ(t.dropped_events, 0u);
  std::set<std::uint32_t> tids;
  for (const auto& a : t.allocs) tids.insert(a.tid);
  EXPECT_EQ(tids.size(), std::size_t{kThreads});
}

// The writer thread compresses what it writes; turned off, every event
// chunk is plain. Either way every event reads back, in order.
TEST(Recorder, TheWriterThreadCompressesEventsUnlessTurnedOff) {
  for (const bool compress : {true, false}) {
    const std::string path = test::temp_path(compress ? "deflate-on.gdtrace" : "deflate-off.gdtrace");
    rec::Options o;
    o.buffer_events = 1024;
    o.flush_interval_ms = 1;
    o.compress = compress;
    ASSERT_TRUE(rec::start(path.c_str(), o));
    constexpr std::uint64_t kEvents = 20000;
    // Less than a half-buffer at a time, which the writer writes before the
    // next is full: a thread that has to wait for it gets its events written
    // at once, uncompressed.
    for (std::uint64_t i = 1; i <= kEvents; ++i) {
      rec::record(rec::AllocEvent{.time_ns = i, .addr = 0x1000 + 64 * i, .bytes = 64});
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rec::stop();
    const std::string bytes = test::read_file(path);
    // Events the writer thread did not get to (the owner's own writes, stop()) stay plain.
    std::uint64_t deflated = 0;
    fuzz::for_each_chunk(bytes.data(), bytes.size(), [&](std::size_t pos, const gdtrace::ChunkHeader& h) {
      if (h.type != static_cast<std::uint16_t>(gdtrace::ChunkType::DeflatedEvents)) return;
      std::uint32_t count;
      std::memcpy(&count, bytes.data() + pos + sizeof h + 4, 4);
      deflated += count;
    });
    if (compress) {
      EXPECT_GT(deflated, kEvents / 2);
      EXPECT_LT(bytes.size(), kEvents * sizeof(gdtrace::RawEvent) / 2);
    } else {
      EXPECT_EQ(deflated, 0u);
      EXPECT_GT(bytes.size(), kEvents * sizeof(gdtrace::RawEvent));
    }
    const Trace t = read_gdtrace(path);
    ASSERT_EQ(t.allocs.size(), kEvents) << (compress ? "compressed" : "plain");
    std::uint64_t misplaced = 0;
    for (std::uint64_t i = 0; i < kEvents; ++i) misplaced += t.allocs[i].addr != 0x1000 + 64 * (i + 1);
    EXPECT_EQ(misplaced, 0u);
  }
}

// The writer drains a thread's retired buffer before the one it fills now:
// in pool order, a newer buffer could reach the file first, and a process
// killed between the two writes would leave a hole, not a lost tail.
TEST(Recorder, AThreadsEventsReachTheFileInTheOrderRecorded) {
  const std::string path = test::temp_path("order.gdtrace");
  rec::Options o;
  o.buffer_events = 64;
  o.buffer_count = 8;
  o.flush_interval_ms = 1;
  ASSERT_TRUE(rec::start(path.c_str(), o));
  constexpr std::uint64_t kEvents = 100000;
  for (std::uint64_t i = 1; i <= kEvents; ++i) rec::record(rec::AllocEvent{.time_ns = i, .addr = i, .bytes = 1});
  rec::stop();

  const std::string bytes = fuzz::with_plain_event_chunks(test::read_file(path));
  ASSERT_GE(bytes.size(), sizeof(gdtrace::FileHeader));
  std::size_t pos = sizeof(gdtrace::FileHeader), chunks = 0, out_of_order = 0;
  std::uint64_t seen = 0, last = 0;
  while (pos + sizeof(gdtrace::ChunkHeader) <= bytes.size()) {
    gdtrace::ChunkHeader h;
    std::memcpy(&h, bytes.data() + pos, sizeof h);
    pos += sizeof h;
    if (h.type == static_cast<std::uint16_t>(gdtrace::ChunkType::Events)) {
      std::uint32_t count;
      std::memcpy(&count, bytes.data() + pos + 4, 4);
      for (std::uint32_t i = 0; i < count; ++i) {
        gdtrace::RawEvent e;
        std::memcpy(&e, bytes.data() + pos + 8 + std::size_t{i} * sizeof e, sizeof e);
        if (e.t0 < last) ++out_of_order;
        last = e.t0;
        ++seen;
      }
      ++chunks;
    }
    pos += h.length;
  }
  EXPECT_EQ(seen, kEvents);
  EXPECT_GT(chunks, kEvents / 64) << "the buffers were drained many times";
  EXPECT_EQ(out_of_order, 0u) << "of " << chunks << " event chunks";
}

// A thread may hold the interning lock when another forks (CUPTI's buffer
// thread naming kernels while a data loader forks workers): the child must
// not inherit it locked, or its first intern() waits forever.
TEST(Recorder, ForkedChildInternsWhileAnotherThreadWasInterning) {
  const std::string path = test::temp_path("fork-intern-%p.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  std::atomic<bool> stop{false};
  std::thread busy([&stop] {
    for (std::uint64_t i = 0; !stop.load(); ++i) rec::intern("name-" + std::to_string(i));
  });
  int hung = 0, failed = 0;
  for (int child = 0; child < 10; ++child) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(2);  // a child stuck on the lock dies of SIGALRM
      _exit(rec::intern("child-name") != 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    hung += WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  stop = true;
  busy.join();
  rec::stop();
  EXPECT_EQ(hung, 0) << "children stuck on the interning lock";
  EXPECT_EQ(failed, 0);
}

// intern() remembers recent texts by address: the same address holding
// another text must get another id, and a later recording must get ids that
// its own file defines.
TEST(Recorder, InternedTextIsComparedNotJustItsAddress) {
  const std::string first = test::temp_path("intern1.gdtrace"), second = test::temp_path("intern2.gdtrace");
  rec::Options o;
  o.stacks = false;
  ASSERT_TRUE(rec::start(first.c_str(), o));
  char buffer[32];
  std::strcpy(buffer, "kernel_a");
  const rec::StringId a = rec::intern(buffer);
  std::strcpy(buffer, "kernel_b");
  const rec::StringId b = rec::intern(buffer);
  EXPECT_NE(a, b);
  std::strcpy(buffer, "kernel_a");
  EXPECT_EQ(rec::intern(buffer), a);
  EXPECT_EQ(rec::intern(std::string_view(buffer, 6)), rec::intern("kernel")) << "a prefix is another text";
  rec::stop();

  ASSERT_TRUE(rec::start(second.c_str(), o));
  rec::intern("padding so that ids differ between the recordings");
  rec::record(rec::KernelEvent{.start_ns = 1, .end_ns = 2, .name = rec::intern(buffer)});
  rec::stop();
  const Trace t = read_gdtrace(second);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.str(t.kernels[0].name), "kernel_a");
}

}  // namespace
}  // namespace gpudiag
