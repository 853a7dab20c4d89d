// JSON that parses but holds no Chrome/Kineto trace events is refused with a
// clear error (gpudiag report then exits 2), while a real profiler run that
// recorded nothing, recognisable by Kineto's own top-level keys, is an empty
// trace.
#include <gtest/gtest.h>

#include "gpudiag/trace_io.h"
#include "gpudiag/import/load_trace.h"
#include "test_support.h"

namespace gpudiag {
namespace {

std::string refusal(const std::string& json) {
  try {
    const Trace t = import_kineto_bytes(json, "in.json");
    return "accepted with " + std::to_string(t.event_count()) + " events";
  } catch (const TraceError& e) {
    return e.what();
  }
}

TEST(KinetoNotATrace, JsonWithoutPhasedEventsIsRefused) {
  const std::string expected = "in.json: JSON, but not a Chrome/Kineto trace (no trace events with a \"ph\" field)";
  EXPECT_EQ(refusal("[1,2,3]"), expected);
  EXPECT_EQ(refusal("[]"), expected);
  EXPECT_EQ(refusal(R"({"traceEvents":[{"a":1}]})"), expected);
  EXPECT_EQ(refusal(R"({"traceEvents":[]})"), expected) << "an empty list and nothing else says nothing of a profiler";
  EXPECT_EQ(refusal(R"([{"name": "x", "ts": 1}, "y", null])"), expected);
  EXPECT_EQ(refusal(R"({"traceEvents":[{"ph": 3}], "schemaVersion": 1})"), expected) << "a phase is a string";
  EXPECT_EQ(refusal(R"({"traceEvents":[{"a":1}], "schemaVersion": 1})"), expected)
      << "Kineto's keys excuse an empty list, not a list of other things";
}

TEST(KinetoNotATrace, ThroughLoadTraceTheRefusalNamesTheFile) {
  const std::string path = test::temp_path("numbers.json");
  test::write_file(path, "[1,2,3]\n");
  try {
    load_trace(path);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": JSON, but not a Chrome/Kineto trace (no trace events with a \"ph\" field)");
  }
}

TEST(KinetoNotATrace, EmptyProfilerRunWithKinetoKeysIsAnEmptyTrace) {
  for (const char* key : {R"("schemaVersion": 1)", R"("deviceProperties": [])", R"("distributedInfo": {"rank": 0})",
                          R"("traceName": "run.pt.trace.json")", R"("baseTimeNanoseconds": 1700000000000000000)"}) {
    SCOPED_TRACE(key);
    const Trace t = import_kineto_bytes(std::string(R"({"traceEvents": [], )") + key + "}", "empty.json");
    EXPECT_EQ(t.source, TraceSource::Kineto);
    EXPECT_EQ(t.event_count(), 0u);
  }
}

TEST(KinetoNotATrace, AnyPhasedEventMakesATraceEvenWhenNothingIsImported) {
  // Metadata and CPU-op events give no GPU events, but they are a trace.
  EXPECT_EQ(import_kineto_bytes(R"([{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}])", "m.json")
                .event_count(),
            0u);
  EXPECT_EQ(import_kineto_bytes(R"({"traceEvents": [7, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})",
                                "cpu.json")
                .event_count(),
            0u);
}

}  // namespace
}  // namespace gpudiag
