// The registry of runtime detectors: one per runtime rule of the catalogue,
// each named for its rule, making findings of it and tested in the file of
// its name, and nothing from an empty trace.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "detect_support.h"
#include "gpudiag/catalogue.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

// The catalogue drives the list: every rule a trace can show has the
// detector of its name, and every detector is a rule's.
TEST(Detectors, EveryRuntimeRuleOfTheCatalogueHasTheDetectorOfItsName) {
  std::vector<std::string> names;
  for (const Detector& d : rule_detectors()) names.emplace_back(d.rule);
  for (const Rule& r : catalogue()) {
    if (!r.is_runtime) continue;
    EXPECT_NE(std::find(names.begin(), names.end(), r.name), names.end()) << r.id << " " << r.name;
  }
  for (const std::string& name : names) {
    const Rule* rule = find_rule(name);
    ASSERT_NE(rule, nullptr) << "detect/" << name << ".cpp has no rules/" << name << ".md";
    EXPECT_TRUE(rule->is_runtime) << name << " is not a runtime rule in its catalogue entry";
  }
  EXPECT_EQ(detectors().size(), rule_detectors().size() + 1) << "and the pass over findings the program raised";
}

// As clang-tidy has one test per check, the detector detect/<rule_name>.cpp
// is tested in tests/detect/<rule_name>_test.cpp.
TEST(Detectors, EveryDetectorHasTheTestFileOfItsName) {
  ASSERT_FALSE(rule_detectors().empty());
  for (const Detector& d : rule_detectors()) {
    std::string file(d.rule);
    std::replace(file.begin(), file.end(), '-', '_');
    const auto test = std::filesystem::path(GPUDIAG_SOURCE_DIR) / "tests" / "detect" / (file + "_test.cpp");
    EXPECT_TRUE(std::filesystem::exists(test)) << "detect/" << file << ".cpp has no tests/detect/" << file << "_test.cpp";
  }
}

// A detector never spells its own rule: the registry runs it for the rule of
// its name, and another rule is named by its name in the catalogue.
TEST(Detectors, ARuleIsNamedByItsCatalogueNameAndAnUnknownNameFailsLoudly) {
  EXPECT_EQ(rule_named("out-of-memory").id, "GD008");
  EXPECT_THROW(rule_named("GD008"), std::logic_error) << "by its name, not its id";
  EXPECT_THROW(rule_named("no-such-rule"), std::logic_error);
}

TEST(Detectors, AFindingIsOfTheRuleWhoseDetectorRuns) {
  const Trace t;
  const MemoryTimeline memory = build_memory_timeline(t);
  const auto time = gpu_time_breakdown(t);
  const RunPhases phases = find_phases(t);
  const DetectOptions options;
  DetectContext ctx{t, memory, time, options, phases};
  EXPECT_THROW(make_finding(ctx, "outside any detector"), std::logic_error);
  ctx.rule = &rule_named("premature-free");
  const Finding f = make_finding(ctx, "freed too early");
  EXPECT_EQ(f.rule_id, "GD004");
  EXPECT_EQ(f.severity, Severity::Error);
  EXPECT_EQ(f.message, "freed too early");
}

TEST(Detectors, AnEmptyTraceHasNoFindings) { EXPECT_TRUE(detect(Trace{}).empty()); }

}  // namespace
}  // namespace gpudiag
