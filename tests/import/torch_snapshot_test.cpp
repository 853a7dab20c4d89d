// PyTorch memory snapshots (import/src/torch_snapshot.cpp) and the
// data-only pickle reader under them: what Python's pickle writes is read
// in every protocol PyTorch uses, a pickle that asks to run code is refused
// before anything runs, damaged bytes are an error and never a crash, and a
// snapshot's leak and out-of-memory are found with their Python lines.
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "pickle_reader.h"
#include "python_with.h"
#include "run_command.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using import::pickle::Value;

// The bytes python3 writes for `expression` pickled with `protocol`, or
// nothing without a python3.
std::optional<std::string> pickled(const std::string& expression, int protocol, const std::string& prelude = "") {
  const auto python = test::python_with("pickle");
  if (!python) return std::nullopt;
  const std::string path = test::temp_path("value.pickle");
  const std::string script = fmt::format("import pickle\n{}\nopen('{}', 'wb').write(pickle.dumps({}, protocol={}))\n",
                                         prelude, path, expression, protocol);
  const std::string script_path = test::temp_path("make.py");
  std::ofstream(script_path) << script;
  if (test::run_command(*python + " " + script_path).status != 0) return std::nullopt;
  return read_file(path);
}

std::string snapshot(const std::string& name, const std::string& options) {
  const auto python = test::python_with("pickle");
  if (!python) return "";
  const std::string path = test::temp_path(name + ".pickle");
  const auto r = test::run_command(fmt::format("{} {}/make_torch_snapshot.py {} {}", *python, IMPORT_TEST_DIR, path, options));
  EXPECT_EQ(r.status, 0) << r.out;
  return path;
}

std::vector<const Finding*> findings_of(const Report& r, std::string_view rule) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings)
    if (f.rule_id == rule) out.push_back(&f);
  return out;
}

class PickleProtocols : public ::testing::TestWithParam<int> {};

// Bytes are pickled as data from protocol 3 on, sets from 4 on (before,
// as calls to Python's constructors, which are refused).
TEST_P(PickleProtocols, ReadWhatPythonsPickleWrites) {
  const int protocol = GetParam();
  const auto bytes = pickled(
      fmt::format("{{'ints': [0, 1, -1, 255, 65535, -2**31, 2**31, 2**63 - 1, -2**63, 2**64 - 1], 'f': 1.5, "
                  "'s': 'h\\u00e9llo', 'none': None, 't': True, 'tuple': (1, 2, 3), 'shared': [x, x], "
                  "'long': 'a' * 300{}{}}}",
                  protocol >= 3 ? ", 'b': b'\\x00\\x01'" : "", protocol >= 4 ? ", 'set': {7}" : ""),
      protocol, "x = [41]");
  if (!bytes) GTEST_SKIP() << "no python3";
  import::pickle::Reader r("value.pickle");
  const Value v = r.read(*bytes);
  ASSERT_EQ(v.kind, Value::Kind::Dict);
  const auto& ints = r.items(r.get(v, "ints"));
  ASSERT_EQ(ints.size(), 10u);
  EXPECT_EQ(r.as_int(ints[2]), -1);
  EXPECT_EQ(r.as_int(ints[4]), 65535);
  EXPECT_EQ(r.as_int(ints[5]), -2147483648LL);
  EXPECT_EQ(r.as_int(ints[6]), 2147483648LL);
  EXPECT_EQ(r.as_int(ints[7]), INT64_MAX);
  EXPECT_EQ(r.as_int(ints[8]), INT64_MIN);
  EXPECT_EQ(r.as_u64(ints[9]), UINT64_MAX);
  EXPECT_EQ(r.get(v, "f").f, 1.5);
  EXPECT_EQ(r.as_string(r.get(v, "s")), "h\xc3\xa9llo");
  if (protocol >= 3) {
    EXPECT_EQ(r.get(v, "b").kind, Value::Kind::Bytes);
  }
  EXPECT_EQ(r.get(v, "none").kind, Value::Kind::None);
  EXPECT_EQ(r.as_int(r.get(v, "t")), 1);
  EXPECT_EQ(r.items(r.get(v, "tuple")).size(), 3u);
  const auto& shared = r.items(r.get(v, "shared"));
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].index, shared[1].index) << "one object pickled twice is one value, by the memo";
  EXPECT_EQ(r.as_int(r.items(shared[0]).at(0)), 41);
  EXPECT_EQ(r.as_string(r.get(v, "long")).size(), 300u);
  if (protocol >= 4) {
    EXPECT_EQ(r.items(r.get(v, "set")).size(), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(TwoToFive, PickleProtocols, ::testing::Values(2, 3, 4, 5));

// A pickle that would run a shell command under pickle.load: refused with
// the reason, and the command never ran (Python's own load does run it).
TEST(PickleReader, RefusesAPickleThatAsksToRunCodeAndRunsNothing) {
  const std::string marker = test::temp_path("pwned");
  const auto bytes = pickled("{'segments': [], 'device_traces': [[Evil()]]}", 4,
                             fmt::format("import os\nclass Evil:\n    def __reduce__(self): return (os.system, "
                                         "('touch {}',))",
                                         marker));
  if (!bytes) GTEST_SKIP() << "no python3";
  const std::string path = test::temp_path("evil.pickle");
  std::ofstream(path, std::ios::binary) << *bytes;
  try {
    import_torch_snapshot(path);
    ADD_FAILURE() << "a pickle that imports os.system was read";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
  const auto r = test::run_command(fmt::format("{} report {}", GPUDIAG_EXE, path));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("a data-only reader runs nothing"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(marker)) << "the pickle's command ran";
  // What the test guards against is real: Python's pickle runs it.
  const auto python = test::python_with("pickle");
  test::run_command(fmt::format("{} -c \"import pickle; pickle.load(open('{}', 'rb'))\"", *python, path));
  EXPECT_TRUE(fs::exists(marker)) << "Python's pickle.load should have run the command";
}

TEST(PickleReader, RefusesEveryOpcodeThatReachesPython) {
  for (const char op : {'c', '\x93', 'R', 'b', 'i', 'o', '\x81', '\x92', 'P', 'Q', '\x82'}) {
    const std::string bytes = std::string("\x80\x04", 2) + op + "whatever\n\n";
    import::pickle::Reader r("op.pickle");
    EXPECT_THROW(r.read(bytes), TraceError) << "opcode " << static_cast<int>(static_cast<unsigned char>(op));
  }
}

// Every cut of a real snapshot, and bytes flipped anywhere: an error or a
// reading, never a crash.
TEST(PickleReader, DamagedSnapshotsAreErrorsNotCrashes) {
  const std::string path = snapshot("to-damage", "--steps 20 --leak-from 5 --oom");
  if (path.empty()) GTEST_SKIP() << "no python3";
  const std::string bytes = read_file(path);
  std::size_t refused = 0;
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 400) {
    try {
      import_torch_snapshot_bytes(bytes.substr(0, cut), "cut.pickle");
    } catch (const TraceError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u);
  std::uint64_t seed = 12345;
  for (int i = 0; i < 600; ++i) {
    std::string flipped = bytes;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    flipped[(seed >> 33) % flipped.size()] ^= static_cast<char>(1 + (seed >> 20) % 255);
    try {
      import_torch_snapshot_bytes(flipped, "flipped.pickle");
    } catch (const TraceError&) {
    }
  }
}

TEST(TorchSnapshot, ALeakingCallSiteAndTheOutOfMemoryAreFoundWithTheirPythonLines) {
  const std::string path = snapshot("leak-oom", "--steps 300 --leak-from 100 --oom");
  if (path.empty()) GTEST_SKIP() << "no python3";
  const Trace t = load_trace(path);
  EXPECT_EQ(t.source, TraceSource::TorchSnapshot);
  EXPECT_EQ(t.allocs.size(), 4u + 300 * 3 + 200);
  EXPECT_EQ(t.ooms.size(), 1u);
  const Report r = analyze(t);
  const auto leaks = findings_of(r, "GD007");
  ASSERT_EQ(leaks.size(), 1u) << "the parameters, held throughout, are no leak";
  EXPECT_EQ(leaks[0]->stack.at(0).file, "train.py");
  EXPECT_EQ(leaks[0]->stack.at(0).line, 57u);
  const auto ooms = findings_of(r, "GD008");
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_NE(ooms[0]->message.find("4.00 GiB"), std::string::npos) << ooms[0]->message;
  EXPECT_NE(ooms[0]->message.find("the GPU had 100 MiB free"), std::string::npos) << ooms[0]->message;
  EXPECT_NE(ooms[0]->message.find("whose largest free block is"), std::string::npos) << ooms[0]->message;
  EXPECT_EQ(ooms[0]->stack.at(0).line, 21u);
  bool holder = false, reserved = false;
  for (const Note& n : ooms[0]->notes) {
    holder = holder || (!n.stack.empty() && n.stack[0].line == 57 && n.message.find("200 MiB") != std::string::npos);
    reserved = reserved || n.message.find("reserved but not allocated") != std::string::npos;
  }
  EXPECT_TRUE(holder) << "who held the memory, by Python line";
  EXPECT_TRUE(reserved);
  EXPECT_NE(ooms[0]->message.find("zero_grad(set_to_none=True)"), std::string::npos) << ooms[0]->message;
  EXPECT_EQ(ooms[0]->message.find("expandable_segments"), std::string::npos)
      << "what is reserved but unallocated could not have held 4 GiB: " << ooms[0]->message;
}

// A request that what is reserved but unallocated would have held: the
// memory is split, and PyTorch's remedy for fragmentation is said.
TEST(TorchSnapshot, AnOutOfMemoryThatFragmentationCausedSaysExpandableSegments) {
  const std::string path = snapshot("fragmented", "--steps 300 --oom --oom-bytes 104857600");
  if (path.empty()) GTEST_SKIP() << "no python3";
  const auto ooms = findings_of(analyze(load_trace(path)), "GD008");
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_NE(ooms[0]->message.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), std::string::npos)
      << ooms[0]->message;
}

TEST(TorchSnapshot, AHealthyLoopHasNoFinding) {
  const std::string path = snapshot("healthy", "--steps 300");
  if (path.empty()) GTEST_SKIP() << "no python3";
  EXPECT_TRUE(analyze(load_trace(path)).findings.empty());
}

// Before PyTorch 2.1 entries had no time; protocol 2 to 5 all occur.
TEST(TorchSnapshot, OlderAndNewerPicklesReadAlike) {
  const std::string untimed = snapshot("untimed", "--steps 120 --leak-from 30 --no-time --protocol 2");
  if (untimed.empty()) GTEST_SKIP() << "no python3";
  const std::string newest = snapshot("newest", "--steps 120 --leak-from 30 --protocol 5");
  const Trace a = load_trace(untimed), b = load_trace(newest);
  EXPECT_EQ(a.allocs.size(), b.allocs.size());
  EXPECT_EQ(a.frees.size(), b.frees.size());
  EXPECT_EQ(findings_of(analyze(a), "GD007").size(), 1u);
  EXPECT_EQ(findings_of(analyze(b), "GD007").size(), 1u);
}

// A snapshot larger than the reader's 4 MiB buffer, read from its file a
// buffer at a time, reads as it does from memory: values that straddle two
// buffers are whole.
TEST(TorchSnapshot, AFileReadInPiecesReadsAsFromMemory) {
  const std::string path = snapshot("pieces", "--steps 30000 --leak-from 20000");
  if (path.empty()) GTEST_SKIP() << "no python3";
  ASSERT_GT(fs::file_size(path), 12u << 20);
  const Trace pieces = import_torch_snapshot(path), whole = import_torch_snapshot_bytes(read_file(path), path);
  EXPECT_EQ(pieces.allocs, whole.allocs);
  EXPECT_EQ(pieces.frees, whole.frees);
  EXPECT_EQ(pieces.memory_counters, whole.memory_counters);
  EXPECT_EQ(pieces.stacks.size(), whole.stacks.size());
}

// The generator's streamed snapshots (for the scale benchmark) are the
// ones pickle.dump writes, as Python and gpudiag read them.
TEST(TorchSnapshot, TheStreamedGeneratorWritesWhatPickleDumpWrites) {
  const std::string dumped = snapshot("dumped", "--steps 60 --leak-from 20 --oom");
  if (dumped.empty()) GTEST_SKIP() << "no python3";
  const std::string streamed = snapshot("streamed", "--steps 60 --leak-from 20 --oom --stream");
  const auto python = test::python_with("pickle");
  const auto same = test::run_command(fmt::format(
      "{} -c \"import pickle, sys; sys.exit(pickle.load(open('{}', 'rb')) != pickle.load(open('{}', 'rb')))\"", *python,
      dumped, streamed));
  EXPECT_EQ(same.status, 0) << same.out;
  const Trace a = load_trace(dumped), b = load_trace(streamed);
  EXPECT_EQ(a.allocs, b.allocs);
  EXPECT_EQ(a.ooms, b.ooms);
}

// An address freed and allocated again, live at the snapshot: its block is
// the history's second allocation, not one from before the history.
TEST(TorchSnapshot, ABlockAllocatedAgainAtTheSameAddressIsTheHistorysAllocation) {
  const auto bytes = pickled(
      "{'segments': [{'device': 0, 'address': 4096, 'total_size': 2048, 'stream': 0, 'blocks': ["
      "{'address': 4096, 'size': 1024, 'requested_size': 1024, 'state': 'active_allocated', 'frames': f}, "
      "{'address': 5120, 'size': 1024, 'requested_size': 0, 'state': 'inactive', 'frames': []}]}], "
      "'device_traces': [[e('segment_alloc', 2048), e('alloc', 1024), e('free_requested', 1024), "
      "e('free_completed', 1024), e('alloc', 1024)]]}",
      4,
      "f = [{'filename': 'train.py', 'line': 7, 'name': 'step'}]\n"
      "t = iter(range(10, 100))\n"
      "def e(action, size): return {'action': action, 'addr': 4096, 'frames': f, 'size': size, 'stream': 0, "
      "'time_us': next(t)}");
  if (!bytes) GTEST_SKIP() << "no python3";
  const Trace t = import_torch_snapshot_bytes(*bytes, "reused.pickle");
  ASSERT_EQ(t.allocs.size(), 2u);
  EXPECT_EQ(t.allocs[0].time_ns, 11'000u);
  EXPECT_EQ(t.allocs[1].time_ns, 14'000u);
  ASSERT_EQ(t.frees.size(), 1u);
  EXPECT_EQ(t.memory_counters.size(), 1u);
}

TEST(TorchSnapshot, APickleThatIsNoSnapshotIsSaidToBeNone) {
  const auto bytes = pickled("[1, 2, 3]", 4);
  if (!bytes) GTEST_SKIP() << "no python3";
  try {
    import_torch_snapshot_bytes(*bytes, "list.pickle");
    ADD_FAILURE() << "a list read as a snapshot";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("not a PyTorch memory snapshot"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpudiag
