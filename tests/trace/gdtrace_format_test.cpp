// The .gdtrace file: a Trace written and read back is the same, in every
// field of every event kind; events are written compressed in a version-2
// file, and version-1 files still read; what is not a .gdtrace, or is of a
// newer version, is a clear TraceError.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstring>
#include <random>

#include "gdtrace_image.h"
#include "gdtrace_format.h"
#include "gdtrace_sample_trace.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

using test::sample_trace;

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

// Every field of every kind, each set to a value of its own: a field the
// codec forgets comes back as its default and the rows differ.
TEST(GdtraceFormat, EveryFieldOfEveryEventKindRoundTrips) {
  Trace in;
  const StringId a = in.intern("a"), b = in.intern("b");
  Stack s;
  s.frames.push_back({.ip = 0x401000});
  const StackId st = in.add_stack(s);
  in.devices.push_back({.id = 3, .name = a, .memory_bytes = 1ull << 40, .uuid = b});
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
  EXPECT_EQ(fuzz::count_chunks(test::read_file(path), gdtrace::ChunkType::GuardedAccess), 1u);
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
