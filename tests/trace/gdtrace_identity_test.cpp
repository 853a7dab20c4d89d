// Who recorded a .gdtrace: the process's place in its job, its host, its
// clock against the epoch (the Identity chunk), its exit status (the Exit
// chunk) and its GPUs' UUIDs written and read back; a trace from before them
// reads them as not known, and what cannot be is not said.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "chunk_writing.h"
#include "gdtrace_format.h"
#include "gdtrace_image.h"
#include "gdtrace_sample_trace.h"
#include "gpudiag/trace_io.h"
#include "identity_payload.h"
#include "test_support.h"

namespace gpudiag {
namespace {

Trace trace_of_rank_three() {
  Trace t = test::sample_trace();
  t.job.rank = 3;
  t.job.world_size = 8;
  t.job.local_rank = 1;
  t.job.backend = "nccl";
  t.job.launcher = "openmpi";
  t.job.host = "node-17";
  t.job.epoch_offset_known = true;
  t.job.epoch_offset_ns = 1'764'000'000'123'456'789;
  t.job.epoch_offset_uncertainty_ns = 42;
  t.exit_status = 3;
  t.devices.at(0).uuid = t.intern("GPU-5a8c1f2e-0d3b-4c7a-9e61-2b4f8d0c7a13");
  return t;
}

void expect_same_place(const JobPlace& out, const JobPlace& in) {
  EXPECT_EQ(out.rank, in.rank);
  EXPECT_EQ(out.world_size, in.world_size);
  EXPECT_EQ(out.local_rank, in.local_rank);
  EXPECT_EQ(out.backend, in.backend);
  EXPECT_EQ(out.launcher, in.launcher);
  EXPECT_EQ(out.host, in.host);
  EXPECT_EQ(out.epoch_offset_known, in.epoch_offset_known);
  EXPECT_EQ(out.epoch_offset_ns, in.epoch_offset_ns);
  EXPECT_EQ(out.epoch_offset_uncertainty_ns, in.epoch_offset_uncertainty_ns);
}

TEST(GdtraceIdentity, ThePlaceInTheJobExitStatusAndGpuUuidsRoundTrip) {
  const Trace in = trace_of_rank_three();
  const std::string path = test::temp_path("identity-roundtrip.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  EXPECT_FALSE(out.truncated) << out.truncation_note;
  EXPECT_TRUE(out.stopped_cleanly) << "the Exit chunk comes before the End chunk";
  expect_same_place(out.job, in.job);
  EXPECT_EQ(out.exit_status, 3);
  EXPECT_EQ(out.pid, 42);
  ASSERT_EQ(out.devices.size(), 1u);
  EXPECT_EQ(out.str(out.devices[0].uuid), "GPU-5a8c1f2e-0d3b-4c7a-9e61-2b4f8d0c7a13");
  std::int64_t pid = 0;
  expect_same_place(read_gdtrace_job(path, &pid), in.job);
  EXPECT_EQ(pid, 42);
}

// The recorder writes the Identity chunk before any event, but reading
// a trace's place without its events walks past them to find it anywhere.
TEST(GdtraceIdentity, AnIdentityAfterTheEventsStillReadsWithoutThem) {
  const std::string path = test::temp_path("identity-late.gdtrace");
  write_gdtrace(test::sample_trace(), path);
  std::string bytes = test::read_file(path);
  const Trace in = trace_of_rank_three();
  const gdtrace::IdentityPayload id{.pid = 42, .rank = in.job.rank, .local_rank = in.job.local_rank,
                                    .world_size = in.job.world_size, .launcher = "slurm", .host = "node-17", .backend = {}};
  std::string payload(gdtrace::identity_size(id), '\0');
  ASSERT_NE(gdtrace::encode_identity(id, payload.data(), payload.size()), 0u);
  bytes += gdtrace::chunk_bytes(gdtrace::ChunkType::Identity, payload);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const JobPlace job = read_gdtrace_job(path);
  EXPECT_EQ(job.rank, 3);
  EXPECT_EQ(job.launcher, "slurm");
  EXPECT_FALSE(job.epoch_offset_known);
}

// Recorded on an H200 before the Identity and Exit chunks and the UUIDs.
TEST(GdtraceIdentity, ATraceFromBeforeThemSaysNoPlaceNoExitStatusAndNoUuid) {
  const std::string gz = std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/h200/h200-cuda-leak.gdtrace.gz";
  gzFile in = gzopen(gz.c_str(), "rb");
  ASSERT_NE(in, nullptr) << gz;
  std::string bytes;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) bytes.append(buffer, static_cast<std::size_t>(n));
  gzclose(in);
  const std::string path = test::temp_path("h200-leak.gdtrace");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  ASSERT_EQ(fuzz::count_chunks(bytes, gdtrace::ChunkType::Identity), 0u);
  const Trace t = read_gdtrace(path);
  EXPECT_FALSE(t.truncated) << t.truncation_note;
  EXPECT_TRUE(t.stopped_cleanly);
  EXPECT_NE(t.pid, 0) << "from the header and the Process chunk";
  expect_same_place(t.job, JobPlace{});
  EXPECT_EQ(t.exit_status, -1);
  ASSERT_FALSE(t.devices.empty());
  for (const DeviceDesc& d : t.devices) {
    EXPECT_FALSE(t.str(d.name).empty());
    EXPECT_EQ(d.uuid, 0u) << t.str(d.name);
  }
  std::int64_t pid = 0;
  expect_same_place(read_gdtrace_job(path, &pid), JobPlace{});
  EXPECT_EQ(pid, t.pid) << "the header's";
}

// A rank not below the world size, a local rank beyond it, a negative size:
// not said, while the host and clock still are.
TEST(GdtraceIdentity, APlaceThatCannotBeReadsAsNotSaid) {
  Trace in = trace_of_rank_three();
  in.job.rank = 8;
  const std::string path = test::temp_path("identity-impossible.gdtrace");
  write_gdtrace(in, path);
  Trace out = read_gdtrace(path);
  EXPECT_EQ(out.job.rank, -1);
  EXPECT_EQ(out.job.world_size, 0);
  EXPECT_EQ(out.job.local_rank, -1);
  EXPECT_EQ(out.job.host, "node-17");
  EXPECT_TRUE(out.job.epoch_offset_known);
  in.job.rank = 2, in.job.local_rank = 9;
  write_gdtrace(in, path);
  out = read_gdtrace(path);
  EXPECT_EQ(out.job.rank, 2);
  EXPECT_EQ(out.job.local_rank, -1);
  in.job.rank = 0, in.job.world_size = -1, in.job.local_rank = 0;
  write_gdtrace(in, path);
  EXPECT_FALSE(read_gdtrace(path).job.known());
}

// Names that run past the payload make the chunk malformed: reading stops
// there, as at any corrupt chunk.
TEST(GdtraceIdentity, AnIdentityWhoseNamesRunPastItIsACorruptChunk) {
  gdtrace::IdentityPayload id;
  id.pid = 7, id.rank = 0, id.world_size = 2, id.host = "node";
  std::string payload(gdtrace::identity_size(id), '\0');
  ASSERT_NE(gdtrace::encode_identity(id, payload.data(), payload.size()), 0u);
  payload.pop_back();
  gdtrace::FileHeader header{};
  std::memcpy(header.magic, gdtrace::kMagic, 8);
  header.version = 2;
  header.header_size = sizeof header;
  header.pid = 7;
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes += gdtrace::chunk_bytes(gdtrace::ChunkType::Identity, payload);
  const Trace t = read_gdtrace_bytes(bytes, "short-identity");
  EXPECT_TRUE(t.corrupt_chunk);
  EXPECT_NE(t.truncation_note.find("malformed payload for chunk type 15"), std::string::npos) << t.truncation_note;
  EXPECT_EQ(t.job.rank, -1);
}

TEST(GdtraceIdentity, AnExitStatusNoProcessCanHaveIsNotSaid) {
  Trace in = test::sample_trace();
  in.exit_status = 3;
  const std::string path = test::temp_path("exit-status.gdtrace");
  write_gdtrace(in, path);
  std::string bytes = test::read_file(path);
  ASSERT_EQ(fuzz::count_chunks(bytes, gdtrace::ChunkType::Exit), 1u);
  EXPECT_EQ(read_gdtrace_bytes(bytes, "exit").exit_status, 3);
  // The Exit chunk's status rewritten to 300, its checksum with it.
  fuzz::for_each_chunk(bytes.data(), bytes.size(), [&](std::size_t pos, gdtrace::ChunkHeader h) {
    if (h.type != static_cast<std::uint16_t>(gdtrace::ChunkType::Exit)) return;
    const std::int32_t status = 300;
    std::memcpy(bytes.data() + pos + sizeof h, &status, sizeof status);
  });
  fuzz::fix_chunk_checksums(bytes.data(), bytes.size());
  const Trace out = read_gdtrace_bytes(bytes, "exit-300");
  EXPECT_FALSE(out.corrupt_chunk) << out.truncation_note;
  EXPECT_EQ(out.exit_status, -1);
}

}  // namespace
}  // namespace gpudiag
