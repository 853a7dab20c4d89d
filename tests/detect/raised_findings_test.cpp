// Findings the traced process raised itself (gdrt's checks) become
// Findings of the rule they name, with the catalogue's severity.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(RaisedFindings, BecomeFindingsWithTheCatalogueSeverity) {
  Trace t;
  t.findings.push_back({.time_ns = 5, .rule_id = t.intern("GD005"), .message = t.intern("item() on an emu tensor"),
                        .stack = stack_named(t, "Tensor::item")});
  const auto f = only(detect(t), "GD005");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "item() on an emu tensor");
  EXPECT_EQ(f[0].severity, Severity::Warning);
}

// A damaged record that names no rule is no finding of any rule.
TEST(RaisedFindings, ARecordThatNamesNoRuleIsNoFinding) {
  Trace t;
  t.findings.push_back({.time_ns = 5, .rule_id = 0, .message = t.intern("garbled")});
  EXPECT_TRUE(detect(t).empty());
}

}  // namespace
}  // namespace gpudiag
