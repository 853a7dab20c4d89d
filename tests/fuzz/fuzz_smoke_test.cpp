// Runs the fuzz targets on a few thousand seeded mutations of valid inputs
// (bit flips, overwritten bytes, cuts, insertions, spliced copies). Nothing
// may crash; a reader may only refuse with TraceError (caught in the target).
// .gdtrace mutations mostly get their chunk checksums rewritten so that the
// changed payloads are parsed rather than stopped at the checksum.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <random>

#include "fuzz_targets.h"
#include "gdtrace_image.h"
#include "report_properties.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8))); break;
      case 1: s[at] = static_cast<char>(rng()); break;
      case 2: s.resize(at); break;
      case 3: s.insert(at, std::string(1 + rng() % 16, static_cast<char>(rng()))); break;
      case 4: {
        const std::size_t len = std::min<std::size_t>(s.size() - at, 1 + rng() % 256);
        s.insert(rng() % s.size(), s.substr(at, len));
        break;
      }
      default: {  // a plausible big number where a length may be
        const std::uint32_t big = static_cast<std::uint32_t>(rng());
        if (at + 4 <= s.size()) std::memcpy(s.data() + at, &big, 4);
      }
    }
  }
  return s;
}

// Three mutations in four get valid chunk checksums; the fourth keeps the
// checksum-mismatch path covered.
std::string mutate_gdtrace(const std::string& seed, std::mt19937_64& rng) {
  std::string s = mutate(seed, rng);
  if (rng() % 4 != 0) fuzz::fix_chunk_checksums(s.data(), s.size());
  return s;
}

template <class Target, class Mutator = decltype(&mutate)>
void run_mutations(const std::vector<std::string>& seeds, Target target, int iterations, Mutator mutator = &mutate) {
  std::mt19937_64 rng(20260522);
  for (const auto& s : seeds) target(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  for (int i = 0; i < iterations; ++i) {
    const std::string input = mutator(seeds[static_cast<std::size_t>(i) % seeds.size()], rng);
    target(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  }
}

std::string gdtrace_seed() {
  Trace t;
  t.pid = 1;
  Stack s;
  s.frames.push_back({.ip = 0x1000});
  const StackId st = t.add_stack(s);
  for (int i = 0; i < 40; ++i) {
    t.kernels.push_back({.start_ns = 10u * i, .end_ns = 10u * i + 5, .name = t.intern("k" + std::to_string(i % 3)), .device = 0});
    t.allocs.push_back({.time_ns = 10u * i, .addr = 0x100u + i, .bytes = 64, .device = 0, .stack = st});
  }
  t.modules.push_back({.path = t.intern("/bin/x"), .base = 0, .size = 0x2000, .low = 0x1000});
  const std::string path = test::temp_path("seed.gdtrace");
  write_gdtrace(t, path);
  return test::read_file(path);
}

// A digest of what chunk payloads carry: event fields, strings, stacks.
std::uint64_t payload_digest(const Trace& t) {
  std::uint64_t d = t.event_count() + t.modules.size() + t.stacks.size();
  for (const auto& k : t.kernels) d = d * 31 + k.start_ns + k.end_ns + t.str(k.name).size() + k.grid[0];
  for (const auto& a : t.allocs) d = d * 31 + a.addr + a.bytes + a.time_ns + a.stack;
  return d;
}

// Both forms of event chunks: compressed, as traces are written, and plain,
// whose mutations reach the event records rather than stop at the inflater.
TEST(FuzzSmoke, GdtraceReaderSurvivesMutations) {
  const std::string seed = gdtrace_seed();
  run_mutations({seed, fuzz::with_plain_event_chunks(seed)}, fuzz::gdtrace_reader, 20000, &mutate_gdtrace);
}

TEST(FuzzSmoke, TheSeedsHoldBothFormsOfEventChunks) {
  const std::string seed = gdtrace_seed(), plain = fuzz::with_plain_event_chunks(seed);
  using gdtrace::ChunkType;
  EXPECT_GT(fuzz::count_chunks(seed, ChunkType::DeflatedEvents), 0u);
  EXPECT_EQ(fuzz::count_chunks(seed, ChunkType::Events), 0u);
  EXPECT_EQ(fuzz::count_chunks(plain, ChunkType::DeflatedEvents), 0u);
  EXPECT_EQ(fuzz::count_chunks(plain, ChunkType::Events), fuzz::count_chunks(seed, ChunkType::DeflatedEvents));
  EXPECT_EQ(payload_digest(read_gdtrace_bytes(plain, "plain.gdtrace")), payload_digest(read_gdtrace_bytes(seed, "seed.gdtrace")));
}

TEST(FuzzSmoke, ChecksumFixingKeepsAnUnchangedImageIntact) {
  std::string seed = gdtrace_seed();
  const std::string before = seed;
  EXPECT_GT(fuzz::fix_chunk_checksums(seed.data(), seed.size()), 3u);
  EXPECT_EQ(seed, before);
  std::string broken = before;
  broken[broken.size() - 3] ^= 0x10;  // inside the last chunk's payload
  ASSERT_TRUE(read_gdtrace_bytes(broken, "broken.gdtrace").truncated);
  fuzz::fix_chunk_checksums(broken.data(), broken.size());
  const Trace fixed = read_gdtrace_bytes(broken, "fixed.gdtrace");
  EXPECT_EQ(fixed.truncation_note.find("checksum"), std::string::npos) << fixed.truncation_note;
}

// The smoke run is only worth something if mutated payloads get past the
// checksum to the chunk parsers: most inputs must, many of them must read
// as a changed trace, and some must be refused there as malformed.
TEST(FuzzSmoke, GdtraceMutationsReachChunkPayloads) {
  const std::string seed = fuzz::with_plain_event_chunks(gdtrace_seed());
  const std::uint64_t seed_digest = payload_digest(read_gdtrace_bytes(seed, "seed.gdtrace"));
  std::mt19937_64 rng(20260522);
  int checksum_stops = 0, malformed = 0, changed = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    const std::string input = mutate_gdtrace(seed, rng);
    try {
      const Trace t = read_gdtrace_bytes(input, "m.gdtrace");
      checksum_stops += t.truncation_note.find("checksum") != std::string::npos;
      malformed += t.truncation_note.find("malformed") != std::string::npos;
      changed += !t.truncated && payload_digest(t) != seed_digest;
    } catch (const TraceError&) {
    }
  }
  EXPECT_LT(checksum_stops, n / 2);
  EXPECT_GT(changed, n / 20) << "whole files whose mutated payloads were read";
  EXPECT_GT(malformed, 0);
}

TEST(FuzzSmoke, KinetoImporterSurvivesMutations) {
  std::vector<std::string> seeds = {
      R"json({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2, "args": {"device": 0, "stream": 7, "grid": [1, 2, 3]}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 3, "dur": 1, "args": {"bytes": 8, "correlation": 4}},
        {"ph": "i", "name": "[memory]", "ts": 1, "args": {"Addr": 16, "Bytes": -8, "Device Type": 1, "Device Id": 0, "Total Allocated": 0}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 2, "dur": 1, "args": {"correlation": 4}}],
        "deviceProperties": [{"id": 0, "name": "G", "totalGlobalMem": 1024}]})json",
  };
  // A slice of a real trace, and its gzip form, exercise the real shapes.
  const std::string real = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/a100-event-sync-multistream.trace.json.gz";
  if (std::filesystem::exists(real)) seeds.push_back(test::read_file(real));
  run_mutations(seeds, fuzz::kineto_importer, 3000);
}

TEST(FuzzSmoke, AllocatorHistoryReaderSurvivesMutations) {
  run_mutations({fuzz::allocator_history_seed()}, fuzz::allocator_history, 3000);
}

// A snapshot written as pickle.dump writes PyTorch's (tests/import/make_torch_snapshot.py):
// a leak, an out-of-memory, frames shared by memo.
TEST(FuzzSmoke, TorchSnapshotReaderSurvivesMutations) {
  const std::string seed = test::read_file(std::string(GPUDIAG_SOURCE_DIR) + "/tests/import/data/leak_oom.snapshot.pickle");
  run_mutations({seed}, fuzz::torch_snapshot, 3000);
}

// The properties the targets check must be able to fail: the history seed
// makes a GD004 that stands on the trace's launch, and one of a trace with no
// use after the free stands on nothing.
TEST(FuzzSmoke, TheFindingsPropertyTellsAFindingWithoutEvidence) {
  const std::string seed = fuzz::allocator_history_seed();
  EXPECT_EQ(fuzz::allocator_history(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size()), 0);
  Trace t;
  t.allocs.push_back({.time_ns = 10, .addr = 0x100, .bytes = 64, .device = 0});
  t.frees.push_back({.time_ns = 20, .addr = 0x100, .bytes = 64, .device = 0});
  Report r;
  Finding invented;
  invented.rule_id = "GD004";
  invented.severity = Severity::Error;
  invented.message = "invented";
  r.findings.push_back(invented);
  EXPECT_NE(fuzz::finding_without_evidence(t, r).find("GD004"), std::string::npos);
  t.kernel_args.push_back({.time_ns = 30, .value = 0x100, .device = 0});
  EXPECT_EQ(fuzz::finding_without_evidence(t, r), "");
}

// A recording cut anywhere loses its newest events; the whole-evidence rule
// keeps a report of what is left from turning their absence into an error.
TEST(FuzzSmoke, CutsOfARecordingWithFreesAndLaunchesGiveNoNewError) {
  Trace t;
  t.pid = 1;
  t.stopped_cleanly = true;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t at = 1'000'000 * i, addr = 0x10000 + 0x1000 * (i % 7);
    t.allocs.push_back({.time_ns = at, .addr = addr, .bytes = 256, .kind = MemKind::Device, .device = 0, .tid = static_cast<std::uint32_t>(1 + i % 2)});
    t.kernel_args.push_back({.time_ns = at + 1000, .value = addr, .memory = MemKind::Device, .device = 0, .stream = 1, .tid = 1, .correlation = i + 1});
    t.kernels.push_back({.start_ns = at + 2000, .end_ns = at + 3000, .name = t.intern("k"), .device = 0, .stream = 1, .correlation = i + 1});
    t.frees.push_back({.time_ns = at + 500'000, .addr = addr, .bytes = 256, .kind = MemKind::Device, .device = 0, .tid = static_cast<std::uint32_t>(1 + i % 2)});
  }
  t.sort_by_time();
  const std::string path = test::temp_path("frees-and-launches.gdtrace");
  write_gdtrace(t, path);
  const std::string bytes = test::read_file(path);
  EXPECT_EQ(fuzz::error_only_in_a_cut(bytes, 20), "");
}

}  // namespace
}  // namespace gpudiag
