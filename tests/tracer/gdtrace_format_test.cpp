// The .gdtrace file: a Trace written and read back is the same; a file cut at
// any byte reads up to its last whole chunk; garbage is a clear TraceError.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstring>
#include <random>

#include "fuzz/gdtrace_image.h"
#include "gdtrace_format.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

Trace sample_trace() {
  Trace t;
  t.pid = 42;
  t.command = "train --epochs 1";
  t.dropped_events = 3;
  t.devices.push_back({0, t.intern("NVIDIA A100"), 80ull << 30});
  t.streams.push_back({0, 7, t.intern("stream 7")});
  Stack s;
  s.frames.push_back({.ip = 0x401000});
  s.frames.push_back({.ip = 0x402000});
  const StackId st = t.add_stack(s);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    t.allocs.push_back({.time_ns = 10 * i, .addr = 0x1000 + i, .bytes = 256, .kind = MemKind::Device, .device = 0, .tid = 1, .stack = st});
    t.kernels.push_back({.start_ns = 10 * i + 1, .end_ns = 10 * i + 5, .name = t.intern("k" + std::to_string(i % 7)),
                         .grid = {1, 2, 3}, .block = {4, 5, 6}, .device = 0, .stream = 7, .tid = 2});
  }
  t.memcpys.push_back({.start_ns = 5, .end_ns = 9, .bytes = 8, .copy = CopyKind::DtoH, .src_kind = MemKind::Device,
                       .dst_kind = MemKind::Pinned, .async = true, .device = 0, .stream = 7});
  t.memory_counters.push_back({.time_ns = 3, .device = 0, .allocated_bytes = 100, .reserved_bytes = 200});
  t.findings.push_back({.time_ns = 4, .rule_id = t.intern("GD005"), .message = t.intern("scalar access")});
  t.ranges.push_back({.start_ns = 2, .end_ns = 40, .name = t.intern("ProfilerStep#1"), .tid = 1});
  Stack fault;
  fault.starts_at_fault = true;
  fault.frames.push_back({.ip = 0x401234});
  t.crashes.push_back({.time_ns = 50000, .signal = 11, .code = 2, .address = 0xdead000, .tid = 9, .stack = t.add_stack(fault)});
  return t;
}

// Where each chunk of a well-formed file starts, its type and payload length.
struct ChunkAt {
  std::size_t pos;
  std::uint16_t type;
  std::uint32_t length;
};

std::vector<ChunkAt> chunks_of(const std::string& bytes) {
  std::vector<ChunkAt> out;
  fuzz::for_each_chunk(bytes.data(), bytes.size(),
                       [&](std::size_t pos, const gdtrace::ChunkHeader& h) { out.push_back({pos, h.type, h.length}); });
  return out;
}

ChunkAt chunk_holding(const std::string& bytes, std::size_t offset) {
  for (const ChunkAt& c : chunks_of(bytes))
    if (offset >= c.pos && offset < c.pos + sizeof(gdtrace::ChunkHeader) + c.length) return c;
  ADD_FAILURE() << "no chunk holds byte " << offset;
  return {0, 0, 0};
}

TEST(GdtraceFormat, WriteThenReadGivesTheSameTrace) {
  const Trace in = sample_trace();
  const std::string path = test::temp_path("roundtrip.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  EXPECT_FALSE(out.truncated);
  EXPECT_FALSE(out.corrupt_chunk);
  EXPECT_TRUE(out.stopped_cleanly);
  EXPECT_EQ(out.pid, 42);
  EXPECT_EQ(out.command, "train --epochs 1");
  EXPECT_EQ(out.dropped_events, 3u);
  ASSERT_EQ(out.allocs.size(), in.allocs.size());
  ASSERT_EQ(out.kernels.size(), in.kernels.size());
  EXPECT_EQ(out.str(out.kernels[12].name), "k5");
  EXPECT_EQ(out.kernels[12].grid[2], 3u);
  EXPECT_EQ(out.kernels[12].block[0], 4u);
  EXPECT_EQ(out.stack(out.allocs[0].stack).frames.at(1).ip, 0x402000u);
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0].dst_kind, MemKind::Pinned);
  EXPECT_TRUE(out.memcpys[0].async);
  ASSERT_EQ(out.memory_counters.size(), 1u);
  EXPECT_EQ(out.memory_counters[0].reserved_bytes, 200u);
  EXPECT_EQ(out.str(out.findings.at(0).rule_id), "GD005");
  EXPECT_EQ(out.str(out.devices.at(0).name), "NVIDIA A100");
  ASSERT_EQ(out.ranges.size(), 1u);
  EXPECT_EQ(out.str(out.ranges[0].name), "ProfilerStep#1");
  EXPECT_EQ(out.ranges[0].end_ns, 40u);
  ASSERT_EQ(out.crashes.size(), 1u);
  EXPECT_EQ(out.crashes[0].address, 0xdead000u);
  EXPECT_TRUE(out.stack(out.crashes[0].stack).starts_at_fault);
  EXPECT_EQ(out.event_count(), in.event_count());
}

// CUPTI's synchronisation records carry no thread: the recorder writes them
// from the thread that drains CUPTI's buffers. The thread that waited is the
// one whose call has the same correlation id.
TEST(GdtraceFormat, ASyncIsOnTheThreadOfTheCallThatWaited) {
  Trace in;
  in.api_calls.push_back({.start_ns = 10, .end_ns = 30, .name = in.intern("cudaStreamSynchronize"), .tid = 7, .correlation = 5});
  in.syncs.push_back({.start_ns = 11, .end_ns = 29, .kind = SyncKind::Stream, .tid = 99, .correlation = 5});
  in.syncs.push_back({.start_ns = 40, .end_ns = 50, .kind = SyncKind::Stream, .tid = 98, .correlation = 6});
  in.syncs.push_back({.start_ns = 60, .end_ns = 70, .kind = SyncKind::Context, .tid = 97});
  const std::string path = test::temp_path("sync_threads.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  ASSERT_EQ(out.syncs.size(), 3u);
  EXPECT_EQ(out.syncs[0].tid, 7u) << "the call with its correlation id was made on thread 7";
  EXPECT_EQ(out.syncs[1].tid, 98u) << "no call has its correlation id";
  EXPECT_EQ(out.syncs[2].tid, 97u) << "no correlation id";
}

// A trace recorded before the recorder told queries apart (or from nsys)
// has CUPTI's stream and event syncs for them: a query that found the work
// done is a Query sync of its stream, one that found it running is no sync.
TEST(GdtraceFormat, QueriesRecordedAsSyncsAreQueriesOrNothing) {
  Trace in;
  const auto call = [&](const char* name, std::int32_t status, std::uint64_t correlation, std::uint64_t at) {
    in.api_calls.push_back({.start_ns = at, .end_ns = at + 5, .name = in.intern(name), .status = status, .tid = 7,
                            .correlation = correlation});
    in.syncs.push_back({.start_ns = at + 1, .end_ns = at + 4,
                        .kind = std::string_view(name).find("Event") != std::string_view::npos ? SyncKind::Event
                                                                                               : SyncKind::Stream,
                        .stream = 13, .correlation = correlation});
  };
  call("cudaEventQuery_v3020", 0, 1, 10);
  call("cudaStreamQuery_v3020", 0, 2, 20);
  call("cuStreamQuery_ptsz", 0, 3, 30);
  call("cudaEventQuery_v3020", kCudaNotReady, 4, 40);
  call("cuStreamQuery", kCudaNotReady, 5, 50);
  call("cudaStreamSynchronize_v3020", 0, 6, 60);
  call("cudaEventSynchronize_v3020", 0, 7, 70);
  const std::string path = test::temp_path("queries.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  ASSERT_EQ(out.syncs.size(), 5u) << "the two that found work running are gone";
  const SyncKind want[] = {SyncKind::Query, SyncKind::Query, SyncKind::Query, SyncKind::Stream, SyncKind::Event};
  for (std::size_t i = 0; i < out.syncs.size(); ++i) {
    EXPECT_EQ(out.syncs[i].kind, want[i]) << i;
    EXPECT_EQ(out.syncs[i].stream, 13u) << i;
    EXPECT_EQ(out.syncs[i].tid, 7u) << i;
  }
  EXPECT_EQ(out.api_calls.size(), in.api_calls.size()) << "the calls themselves stay";
}

// Every field of every kind, each set to a value of its own: a field the
// codec forgets comes back as its default and the rows differ.
TEST(GdtraceFormat, EveryFieldOfEveryEventKindRoundTrips) {
  Trace in;
  const StringId a = in.intern("a"), b = in.intern("b");
  Stack s;
  s.frames.push_back({.ip = 0x401000});
  const StackId st = in.add_stack(s);
  in.devices.push_back({.id = 3, .name = a, .memory_bytes = 1ull << 40});
  in.streams.push_back({.device = 3, .id = 99, .name = b, .handle = 0x5555deadbeef, .handle_known = true});
  in.allocs.push_back({1, 2, 3, MemKind::Managed, 4, 5, 6, 7, st});
  in.frees.push_back({8, 9, 10, MemKind::Pinned, 11, 12, 13, 14, st});
  in.memcpys.push_back({15, 16, 17, 18, 19, CopyKind::PtoP, MemKind::Device, MemKind::Managed, true, 20, 21, 22, 23, 24, st});
  in.memsets.push_back({25, 26, 27, 28, 29, MemKind::Device, true, 30, 31, 32, 33, st});
  in.kernels.push_back({34, 35, a, {36, 37, 38}, {39, 40, 41}, 42, 43, 44, 45, 46, st});
  in.kernel_args.push_back({47, 0x7f0000001000, 48, MemKind::Pageable, 49, 50, 51, 52, st});
  in.syncs.push_back({53, 54, SyncKind::Event, 55, 56, 57, 58, 59, st});
  in.api_calls.push_back({60, 61, a, ApiDomain::Driver, -700, 62, 63, 64, st, b});
  in.host_accesses.push_back({65, 66, 67, AccessKind::Write, 68, 69, st});
  in.ooms.push_back({70, 71, 72, 73, 74, 75, st});
  in.findings.push_back({76, a, b, 77, st});
  in.ranges.push_back({78, 79, b, 80});
  in.memory_counters.push_back({81, 82, 83, 84});
  const std::string path = test::temp_path("every-field.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  EXPECT_EQ(out.devices, in.devices);
  EXPECT_EQ(out.streams, in.streams);
  EXPECT_EQ(out.allocs, in.allocs);
  EXPECT_EQ(out.frees, in.frees);
  EXPECT_EQ(out.memcpys, in.memcpys);
  EXPECT_EQ(out.memsets, in.memsets);
  EXPECT_EQ(out.kernels, in.kernels);
  EXPECT_EQ(out.kernel_args, in.kernel_args);
  EXPECT_EQ(out.syncs, in.syncs);
  EXPECT_EQ(out.api_calls, in.api_calls);
  EXPECT_EQ(out.host_accesses, in.host_accesses);
  EXPECT_EQ(out.ooms, in.ooms);
  EXPECT_EQ(out.findings, in.findings);
  EXPECT_EQ(out.ranges, in.ranges);
  EXPECT_EQ(out.memory_counters, in.memory_counters);
  EXPECT_EQ(out.event_count(), in.event_count());
}

TEST(GdtraceFormat, TruncatedFileReadsUpToTheLastWholeChunk) {
  const std::string path = test::temp_path("full.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string bytes = test::read_file(path);
  std::size_t previous = 0;
  // Cut at many points, including inside the header (an error) and chunks.
  for (std::size_t cut = 0; cut < bytes.size(); cut += 997) {
    const std::string prefix = bytes.substr(0, cut);
    if (cut < 32) {
      EXPECT_THROW(read_gdtrace_bytes(prefix, "cut"), TraceError) << cut;
      continue;
    }
    Trace t = read_gdtrace_bytes(prefix, "cut");
    EXPECT_GE(t.event_count(), previous) << "a longer prefix never loses events";
    previous = t.event_count();
    EXPECT_FALSE(t.stopped_cleanly) << cut;  // the End chunk is cut off
    if (cut > 32) {
      EXPECT_TRUE(t.truncated) << cut;
      EXPECT_FALSE(t.corrupt_chunk) << cut << ": a file that just ends is not damage";
      EXPECT_NE(t.truncation_note.find("file ends inside a chunk"), std::string::npos) << t.truncation_note;
      EXPECT_NE(t.truncation_note.find("byte"), std::string::npos);
    }
  }
  EXPECT_GT(previous, 0u);
}

TEST(GdtraceFormat, CorruptChunkStopsReadingThereAndSaysSo) {
  const std::string path = test::temp_path("corrupt.gdtrace");
  write_gdtrace(sample_trace(), path);
  std::string bytes = test::read_file(path);
  const std::size_t flipped = bytes.size() / 2;
  bytes[flipped] ^= 0x5a;
  const ChunkAt hit = chunk_holding(bytes, flipped);
  ASSERT_GT(hit.pos, 0u);
  ASSERT_GE(flipped, hit.pos + 16) << "the flip must hit a payload for a checksum mismatch";
  Trace t = read_gdtrace_bytes(bytes, "corrupt");
  EXPECT_TRUE(t.truncated);
  EXPECT_TRUE(t.corrupt_chunk);
  EXPECT_NE(t.truncation_note.find("checksum"), std::string::npos) << t.truncation_note;
  // Damage in the middle of the file is not worded as the file ending there.
  EXPECT_EQ(t.truncation_note.find("file ends"), std::string::npos) << t.truncation_note;
  EXPECT_NE(t.truncation_note.find("corrupt chunk at byte " + std::to_string(hit.pos) + " "), std::string::npos)
      << t.truncation_note;
  const std::size_t after = bytes.size() - (hit.pos + 16 + hit.length);
  EXPECT_NE(t.truncation_note.find("the " + std::to_string(after) + " bytes after it were ignored"), std::string::npos)
      << t.truncation_note;
  EXPECT_TRUE(t.stopped_cleanly) << "the file still ends with the End chunk of a clean stop";
  EXPECT_LT(t.event_count(), sample_trace().event_count());
}

TEST(GdtraceFormat, FileWithoutTheEndChunkDidNotStopCleanly) {
  const std::string path = test::temp_path("no-end.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string bytes = test::read_file(path);
  const auto chunks = chunks_of(bytes);
  ASSERT_EQ(chunks.back().type, static_cast<std::uint16_t>(gdtrace::ChunkType::End));
  // As after SIGKILL: every chunk whole, only the End chunk of stop() missing.
  const Trace t = read_gdtrace_bytes(bytes.substr(0, chunks.back().pos), "killed");
  EXPECT_FALSE(t.truncated) << t.truncation_note;
  EXPECT_FALSE(t.stopped_cleanly);
  EXPECT_EQ(t.event_count(), sample_trace().event_count());
  // write_gdtrace keeps it: a trace that did not stop cleanly is written without End.
  Trace unclean = sample_trace();
  unclean.stopped_cleanly = false;
  write_gdtrace(unclean, path);
  EXPECT_FALSE(read_gdtrace(path).stopped_cleanly);
  EXPECT_NE(chunks_of(test::read_file(path)).back().type, static_cast<std::uint16_t>(gdtrace::ChunkType::End));
}

// A crash handler writes End once every buffer is written; if the program's
// own handler lets it go on, only a later End means nothing is missing.
TEST(GdtraceFormat, OnlyAnEndChunkWrittenLastIsACleanStop) {
  const std::string path = test::temp_path("end-then-more.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string bytes = test::read_file(path);
  const auto chunks = chunks_of(bytes);
  ASSERT_GE(chunks.size(), 3u);
  ASSERT_EQ(chunks.back().type, static_cast<std::uint16_t>(gdtrace::ChunkType::End));
  // The End chunk moved before the last chunk that precedes it.
  const std::size_t end_at = chunks.back().pos, before = chunks[chunks.size() - 2].pos;
  const std::string moved =
      bytes.substr(0, before) + bytes.substr(end_at) + bytes.substr(before, end_at - before);
  const Trace t = read_gdtrace_bytes(moved, "end-then-more");
  EXPECT_FALSE(t.truncated) << t.truncation_note;
  EXPECT_FALSE(t.stopped_cleanly) << "chunks after the End chunk: the recording went on";
  EXPECT_TRUE(read_gdtrace_bytes(bytes + bytes.substr(end_at), "two-ends").stopped_cleanly)
      << "a crash handler's End, then the clean stop's";
}

TEST(GdtraceFormat, BadTagInTheMiddleIsDamageNotTheEnd) {
  const std::string path = test::temp_path("bad-tag.gdtrace");
  write_gdtrace(sample_trace(), path);
  std::string bytes = test::read_file(path);
  const auto chunks = chunks_of(bytes);
  ASSERT_GT(chunks.size(), 4u);
  const ChunkAt middle = chunks[chunks.size() / 2];
  bytes[middle.pos] = 'X';
  const Trace t = read_gdtrace_bytes(bytes, "bad-tag");
  EXPECT_TRUE(t.truncated);
  EXPECT_TRUE(t.corrupt_chunk);
  EXPECT_NE(t.truncation_note.find("corrupt chunk at byte " + std::to_string(middle.pos) + " (bad chunk tag)"),
            std::string::npos)
      << t.truncation_note;
  EXPECT_NE(t.truncation_note.find("the " + std::to_string(bytes.size() - middle.pos) +
                                   " bytes from it to the end of the file were ignored"),
            std::string::npos)
      << t.truncation_note;
  EXPECT_NE(t.truncation_note.find("read the " + std::to_string(chunks.size() / 2) + " whole chunks"), std::string::npos)
      << t.truncation_note;
  EXPECT_TRUE(t.stopped_cleanly);
}

TEST(GdtraceFormat, LengthPastTheEndIsDamageWhenTheEndChunkFollows) {
  const std::string path = test::temp_path("bad-length.gdtrace");
  write_gdtrace(sample_trace(), path);
  std::string bytes = test::read_file(path);
  const auto chunks = chunks_of(bytes);
  const ChunkAt middle = chunks[chunks.size() / 2];
  const std::uint32_t huge = 60u << 20;  // under the 64 MiB limit, past the end of this file
  std::memcpy(&bytes[middle.pos + 8], &huge, sizeof huge);
  const Trace damaged = read_gdtrace_bytes(bytes, "bad-length");
  EXPECT_TRUE(damaged.corrupt_chunk) << damaged.truncation_note;
  EXPECT_NE(damaged.truncation_note.find("chunk length runs past the end of the file"), std::string::npos)
      << damaged.truncation_note;
  EXPECT_TRUE(damaged.stopped_cleanly);
  // Without the End chunk nothing tells the two apart: the file just ends.
  const Trace cut = read_gdtrace_bytes(bytes.substr(0, chunks.back().pos), "cut");
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(cut.corrupt_chunk);
  EXPECT_NE(cut.truncation_note.find("file ends inside a chunk at byte " + std::to_string(middle.pos)), std::string::npos)
      << cut.truncation_note;
  EXPECT_FALSE(cut.stopped_cleanly);
}

TEST(GdtraceFormat, CorruptEndChunkKeepsEveryEventButNotTheCleanStop) {
  const std::string path = test::temp_path("bad-end.gdtrace");
  write_gdtrace(sample_trace(), path);
  std::string bytes = test::read_file(path);
  bytes.back() ^= 0x01;  // the End chunk's payload
  const Trace t = read_gdtrace_bytes(bytes, "bad-end");
  EXPECT_TRUE(t.corrupt_chunk);
  EXPECT_NE(t.truncation_note.find("it is the last chunk in the file"), std::string::npos) << t.truncation_note;
  EXPECT_FALSE(t.stopped_cleanly);
  EXPECT_EQ(t.event_count(), sample_trace().event_count());
}

TEST(GdtraceFormat, NotAGdtraceIsAClearError) {
  try {
    read_gdtrace_bytes("this is not a trace at all, just text", "notes.txt");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a .gdtrace"), std::string::npos);
  }
  EXPECT_THROW(read_gdtrace_bytes("", "empty"), TraceError);
  EXPECT_THROW(read_gdtrace("/nonexistent/file.gdtrace"), TraceError);
}

TEST(GdtraceFormat, NewerVersionIsRejectedWithTheVersion) {
  const std::string path = test::temp_path("v.gdtrace");
  write_gdtrace(sample_trace(), path);
  std::string bytes = test::read_file(path);
  bytes[8] = 99;
  try {
    read_gdtrace_bytes(bytes, "v.gdtrace");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("version 99"), std::string::npos) << e.what();
  }
}

// The chunk checksum is zlib's CRC-32, so any zlib-based tool can verify a
// chunk; a continued checksum equals the one over the whole payload, which
// the recorder relies on when it checksums an Events header and its records apart.
// A host access the copy guard caught: its own chunk (written from the fault
// handler), read back as a HostAccess naming the copy.
TEST(GdtraceFormat, AGuardedAccessRoundTripsAsAHostAccessNamingItsCopy) {
  Trace in;
  Stack fault;
  fault.starts_at_fault = true;
  fault.frames.push_back({.ip = 0x401234});
  fault.frames.push_back({.ip = 0x405678});
  in.host_accesses.push_back({.time_ns = 70, .addr = 0x7f0000001010, .access = AccessKind::Write, .tid = 9,
                              .stack = in.add_stack(fault), .guarded_copy = 1234});
  in.host_accesses.push_back({.time_ns = 60, .addr = 0x5000, .bytes = 4, .tid = 3});
  const std::string path = test::temp_path("guarded.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  EXPECT_FALSE(out.truncated) << out.truncation_note;
  ASSERT_EQ(out.host_accesses.size(), 2u);
  const HostAccess& plain = out.host_accesses[0];  // in time order
  EXPECT_EQ(plain.guarded_copy, 0u);
  EXPECT_EQ(plain.bytes, 4u);
  const HostAccess& caught = out.host_accesses[1];
  EXPECT_EQ(caught.guarded_copy, 1234u);
  EXPECT_EQ(caught.addr, 0x7f0000001010u);
  EXPECT_EQ(caught.access, AccessKind::Write);
  EXPECT_EQ(caught.time_ns, 70u);
  EXPECT_EQ(caught.tid, 9u);
  EXPECT_EQ(caught.bytes, 0u) << "a fault does not tell the access's size";
  const Stack& stack = out.stack(caught.stack);
  EXPECT_TRUE(stack.starts_at_fault);
  ASSERT_EQ(stack.frames.size(), 2u);
  EXPECT_EQ(stack.frames[1].ip, 0x405678u);
  std::size_t chunks = 0;
  for (const ChunkAt& c : chunks_of(test::read_file(path)))
    chunks += c.type == static_cast<std::uint16_t>(gdtrace::ChunkType::GuardedAccess);
  EXPECT_EQ(chunks, 1u);
}

// An empty trace's image, without the End chunk, then one chunk of `type`
// with `payload` (its checksum right): that chunk is the file's last.
std::string with_last_chunk(gdtrace::ChunkType type, const std::string& payload) {
  const std::string path = test::temp_path("last-chunk-base.gdtrace");
  Trace empty;
  empty.stopped_cleanly = false;
  write_gdtrace(empty, path);
  const gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(type), 0,
                               static_cast<std::uint32_t>(payload.size()), gdtrace::checksum(payload.data(), payload.size())};
  return test::read_file(path) + std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

TEST(GdtraceFormat, AMalformedGuardedAccessChunkIsDamageNotACrash) {
  const auto with_chunk = [](const std::string& payload) {
    return with_last_chunk(gdtrace::ChunkType::GuardedAccess, payload);
  };
  // 32 bytes of fields whose frame count says 2, with one frame after them.
  std::string fields(32, '\0');
  const std::uint16_t two = 2;
  std::memcpy(fields.data() + 28, &two, sizeof two);
  // And one that says no frames but has bytes after its fields.
  const std::string trailing = std::string(32, '\0') + std::string(8, '\1');
  for (const std::string& payload : {fields + std::string(8, '\1'), trailing, fields.substr(0, 20), std::string()}) {
    const Trace t = read_gdtrace_bytes(with_chunk(payload), "bad");
    EXPECT_TRUE(t.corrupt_chunk) << payload.size();
    EXPECT_NE(t.truncation_note.find("malformed payload for chunk type 9"), std::string::npos) << t.truncation_note;
    EXPECT_TRUE(t.host_accesses.empty());
  }
  // The right length reads; cut short, it is a file that ends inside a chunk.
  const std::string good = with_chunk(fields + std::string(16, '\1'));
  EXPECT_EQ(read_gdtrace_bytes(good, "good").host_accesses.size(), 1u);
  const Trace cut = read_gdtrace_bytes(good.substr(0, good.size() - 5), "cut");
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(cut.corrupt_chunk);
  EXPECT_TRUE(cut.host_accesses.empty());
}

// The events of a trace take a sixth of their 88 bytes each, compressed;
// that needs version 2, which a version-1 reader refuses rather than skip
// the chunk type it does not know, with every event in it.
TEST(GdtraceFormat, EventsAreWrittenCompressedInAVersion2File) {
  const std::string path = test::temp_path("deflated.gdtrace");
  const Trace in = sample_trace();
  write_gdtrace(in, path);
  const std::string bytes = test::read_file(path);
  gdtrace::FileHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  EXPECT_EQ(header.version, 2u);
  EXPECT_GT(fuzz::count_chunks(bytes, gdtrace::ChunkType::DeflatedEvents), 0u);
  EXPECT_EQ(fuzz::count_chunks(bytes, gdtrace::ChunkType::Events), 0u);
  EXPECT_LT(bytes.size(), in.event_count() * sizeof(gdtrace::RawEvent) / 4);
  EXPECT_EQ(read_gdtrace_bytes(bytes, "deflated").event_count(), in.event_count());
}

TEST(GdtraceFormat, AVersion1FileOfPlainEventChunksReadsTheSame) {
  const std::string path = test::temp_path("v1.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string v2 = test::read_file(path);
  std::string v1 = fuzz::with_plain_event_chunks(v2);
  const std::uint32_t one = 1;
  std::memcpy(v1.data() + offsetof(gdtrace::FileHeader, version), &one, sizeof one);
  ASSERT_GT(v1.size(), v2.size());
  const Trace a = read_gdtrace_bytes(v1, "v1"), b = read_gdtrace_bytes(v2, "v2");
  EXPECT_EQ(a.format_version, 1u);
  EXPECT_FALSE(a.truncated) << a.truncation_note;
  EXPECT_EQ(a.event_count(), b.event_count());
  EXPECT_EQ(a.allocs, b.allocs);
  EXPECT_EQ(a.kernels.size(), b.kernels.size());
}

// A compressed chunk must inflate to exactly the events its count says:
// anything else is a damaged chunk, read up to, and never a crash or a
// count-sized allocation.
TEST(GdtraceFormat, ADeflatedEventsChunkThatDoesNotInflateToItsCountIsDamage) {
  std::vector<gdtrace::RawEvent> events(3);
  for (std::size_t i = 0; i < events.size(); ++i) {
    events[i] = {};
    events[i].kind = static_cast<std::uint8_t>(EventKind::Alloc);
    events[i].t0 = events[i].t1 = 10 * (i + 1);
    events[i].p[0] = 0x1000 * (i + 1);
    events[i].p[1] = 64;
  }
  libdeflate_compressor* c = libdeflate_alloc_compressor(gdtrace::kDeflateLevel);
  std::string stream(1024, '\0');
  stream.resize(libdeflate_deflate_compress(c, events.data(), events.size() * sizeof(gdtrace::RawEvent), stream.data(),
                                            stream.size()));
  libdeflate_free_compressor(c);
  ASSERT_FALSE(stream.empty());
  const auto payload = [](std::uint32_t count, const std::string& body) {
    const std::uint32_t head[2] = {7, count};
    return std::string(reinterpret_cast<const char*>(head), sizeof head) + body;
  };
  const auto chunk = [](const std::string& p) { return with_last_chunk(gdtrace::ChunkType::DeflatedEvents, p); };

  const Trace good = read_gdtrace_bytes(chunk(payload(3, stream)), "good");
  ASSERT_EQ(good.allocs.size(), 3u) << good.truncation_note;
  EXPECT_EQ(good.allocs[2].addr, 0x3000u);
  EXPECT_EQ(good.allocs[0].tid, 7u) << "the chunk's thread";

  std::string garbled = stream;
  garbled[garbled.size() / 2] = static_cast<char>(garbled[garbled.size() / 2] ^ 0x41);
  for (const std::string& bad : {payload(4, stream), payload(2, stream), payload(0, stream), payload(0xffffffffu, stream),
                                 payload(3, "not a deflate stream"), payload(3, garbled), payload(3, ""),
                                 std::string("\7\0\0", 3)}) {
    const Trace t = read_gdtrace_bytes(chunk(bad), "bad");
    EXPECT_TRUE(t.corrupt_chunk) << bad.size();
    EXPECT_NE(t.truncation_note.find("malformed payload for chunk type 10"), std::string::npos) << t.truncation_note;
    EXPECT_TRUE(t.allocs.empty());
  }
  // Cut short, it is a file that ends inside a chunk.
  const std::string whole = chunk(payload(3, stream));
  const Trace cut = read_gdtrace_bytes(whole.substr(0, whole.size() - 3), "cut");
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(cut.corrupt_chunk);
}

TEST(GdtraceFormat, ChunkChecksumIsZlibCrc32) {
  EXPECT_EQ(gdtrace::checksum("123456789", 9), 0xCBF43926u);  // the standard check value
  EXPECT_EQ(gdtrace::checksum("", 0), 0u);
  std::mt19937 rng(7);
  std::vector<unsigned char> data(100'003);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{88}, std::size_t{4097}, data.size()}) {
    const auto expect = static_cast<std::uint32_t>(crc32(0L, data.data(), static_cast<uInt>(n)));
    EXPECT_EQ(gdtrace::checksum(data.data(), n), expect) << n;
    const std::size_t cut = n / 3;
    EXPECT_EQ(gdtrace::checksum(data.data() + cut, n - cut, gdtrace::checksum(data.data(), cut)), expect) << n;
  }
}

}  // namespace
}  // namespace gpudiag
