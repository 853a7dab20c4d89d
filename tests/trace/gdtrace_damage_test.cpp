// A damaged .gdtrace: a file cut at any byte reads up to its last whole
// chunk; a corrupt or malformed chunk stops reading there, is told from the
// file's end and says what was ignored; only an End chunk written last is a
// clean stop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gdtrace_image.h"
#include "gdtrace_format.h"
#include "gdtrace_sample_trace.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

using test::sample_trace;

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

// Of a file cut anywhere, every event up to the reader's horizon is there:
// what a report judges is whole, and the horizon is no earlier than it must be.
void expect_whole_up_to_the_horizon(const std::string& bytes, const char* what) {
  const Trace full = read_gdtrace_bytes(bytes, "full");
  ASSERT_TRUE(full.complete());
  std::size_t judged = 0;
  for (int percent = 5; percent < 100; percent += 5) {
    const std::size_t at = bytes.size() * static_cast<std::size_t>(percent) / 100;
    SCOPED_TRACE(std::string(what) + ", cut at " + std::to_string(percent) + "%");
    const Trace cut = read_gdtrace_bytes(bytes.substr(0, at), "cut");
    ASSERT_FALSE(cut.complete());
    const std::uint64_t h = cut.complete_until_ns;
    const auto up_to_h = [h](const auto& column) {
      return std::count_if(column.begin(), column.end(), [h](const auto& e) { return start_of(e) < h; });
    };
    EXPECT_EQ(up_to_h(cut.allocs), up_to_h(full.allocs));
    EXPECT_EQ(up_to_h(cut.kernels), up_to_h(full.kernels));
    judged += static_cast<std::size_t>(up_to_h(cut.allocs));
  }
  EXPECT_GT(judged, 0u) << "some cut is judged on some events";
}

TEST(GdtraceDamage, ACutFileIsWholeUpToItsLastDrainedMarker) {
  const std::string path = test::temp_path("drained.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string bytes = test::read_file(path);
  ASSERT_GT(fuzz::count_chunks(bytes, gdtrace::ChunkType::Drained), 5u);
  expect_whole_up_to_the_horizon(bytes, "with Drained markers");
  const Trace half = read_gdtrace_bytes(bytes.substr(0, bytes.size() / 2), "half");
  EXPECT_GT(half.complete_until_ns, 10'000u) << "the markers give a horizon past the first passes";
}

// A file from before the markers, cut: a thread whose first chunk is missing
// may have recorded at any time, so nothing in it is known to be whole.
TEST(GdtraceDamage, WithoutMarkersNothingInACutFileIsWhole) {
  const std::string path = test::temp_path("no-markers.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::string bytes = test::read_file(path);
  std::string stripped = bytes.substr(0, sizeof(gdtrace::FileHeader));
  fuzz::for_each_chunk(bytes.data(), bytes.size(), [&](std::size_t pos, const gdtrace::ChunkHeader& h) {
    if (h.type != static_cast<std::uint16_t>(gdtrace::ChunkType::Drained)) stripped += bytes.substr(pos, sizeof h + h.length);
  });
  ASSERT_EQ(fuzz::count_chunks(stripped, gdtrace::ChunkType::Drained), 0u);
  const Trace cut = read_gdtrace_bytes(stripped.substr(0, stripped.size() / 2), "cut");
  EXPECT_GT(cut.allocs.size(), 0u);
  EXPECT_EQ(cut.complete_until_ns, 0u);
  EXPECT_EQ(cut.whole_part().event_count(), cut.crashes.size());
  EXPECT_TRUE(read_gdtrace_bytes(stripped, "whole").complete());
}

TEST(GdtraceDamage, ADrainedMarkerAfterTheEndChunkKeepsTheStopClean) {
  const std::string path = test::temp_path("drained-after-end.gdtrace");
  write_gdtrace(sample_trace(), path);
  const std::uint64_t late = 99;
  const gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(gdtrace::ChunkType::Drained), 0,
                               sizeof late, gdtrace::checksum(&late, sizeof late)};
  const Trace t = read_gdtrace_bytes(test::read_file(path) + std::string(reinterpret_cast<const char*>(&h), sizeof h) +
                                         std::string(reinterpret_cast<const char*>(&late), sizeof late),
                                     "late-marker");
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_TRUE(t.complete());
}

TEST(GdtraceDamage, TruncatedFileReadsUpToTheLastWholeChunk) {
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

TEST(GdtraceDamage, CorruptChunkStopsReadingThereAndSaysSo) {
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

TEST(GdtraceDamage, FileWithoutTheEndChunkDidNotStopCleanly) {
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
TEST(GdtraceDamage, OnlyAnEndChunkWrittenLastIsACleanStop) {
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

TEST(GdtraceDamage, BadTagInTheMiddleIsDamageNotTheEnd) {
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

TEST(GdtraceDamage, LengthPastTheEndIsDamageWhenTheEndChunkFollows) {
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

TEST(GdtraceDamage, CorruptEndChunkKeepsEveryEventButNotTheCleanStop) {
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

TEST(GdtraceDamage, AMalformedGuardedAccessChunkIsDamageNotACrash) {
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

// A compressed chunk must inflate to exactly the events its count says:
// anything else is a damaged chunk, read up to, and never a crash or a
// count-sized allocation.
TEST(GdtraceDamage, ADeflatedEventsChunkThatDoesNotInflateToItsCountIsDamage) {
  std::vector<gdtrace::RawEvent> events(3);
  for (std::size_t i = 0; i < events.size(); ++i) {
    events[i] = {};
    events[i].kind = static_cast<std::uint8_t>(EventKind::Alloc);
    events[i].t0 = events[i].t1 = 10 * (i + 1);
    events[i].p[0] = 0x1000 * (i + 1);
    events[i].p[1] = 64;
  }
  gdtrace::Deflater deflater(events.size());
  const std::string stream(deflater.out() ? deflater.out() : "",
                           deflater.compress(events.data(), events.size() * sizeof(gdtrace::RawEvent)));
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

}  // namespace
}  // namespace gpudiag
