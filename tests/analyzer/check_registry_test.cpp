// Binding compiled-in checks to the catalogue's rules (check.h): a check
// names its rule once, and takes the rule's id from the catalogue.
#include <gtest/gtest.h>

#include "check.h"

namespace gpudiag::lint {
namespace {

class Inert : public Check {
 public:
  void register_matchers(clang::ast_matchers::MatchFinder&) override {}
  void run(const clang::ast_matchers::MatchFinder::MatchResult&) override {}
};

CheckEntry entry(std::string_view rule_name) {
  return {rule_name, [] { return std::unique_ptr<Check>(std::make_unique<Inert>()); }};
}

TEST(CheckRegistry, TheCatalogueGivesEachCheckItsIdInIdOrder) {
  const CheckEntry entries[] = {entry("memory-leak"), entry("premature-free")};
  std::vector<std::string> errors;
  const std::vector<CheckInfo> checks = bind_checks(entries, errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].id(), "GD004");
  EXPECT_EQ(checks[0].name(), "premature-free");
  EXPECT_EQ(checks[1].id(), "GD007");
  // What an instance reports under: the finding's rule id, NOLINT, --checks.
  const std::unique_ptr<Check> check = checks[1].make();
  EXPECT_EQ(check->id(), "GD007");
  EXPECT_EQ(check->name(), "memory-leak");
  EXPECT_EQ(&check->rule(), find_rule("GD007"));
}

TEST(CheckRegistry, ACheckThatNamesNoRuleOfTheCatalogueIsLeftOutAndSaysSo) {
  const CheckEntry entries[] = {entry("premature-fre"), entry("premature-free")};
  std::vector<std::string> errors;
  const std::vector<CheckInfo> checks = bind_checks(entries, errors);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].id(), "GD004");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "the check 'premature-fre' names no rule of the catalogue (rules/premature-fre.md)");
}

// find_rule takes ids and any case; a check must use the name its file has.
TEST(CheckRegistry, ARuleIsNamedByItsExactName) {
  const CheckEntry entries[] = {entry("GD004"), entry("Premature-Free")};
  std::vector<std::string> errors;
  EXPECT_TRUE(bind_checks(entries, errors).empty());
  EXPECT_EQ(errors.size(), 2u);
}

TEST(CheckRegistry, ARuleGpulintCannotSeeHasNoCheck) {
  const Rule* runtime_only = nullptr;
  for (const Rule& rule : catalogue())
    if (!rule.is_static) runtime_only = &rule;
  ASSERT_NE(runtime_only, nullptr);
  const CheckEntry entries[] = {entry(runtime_only->name)};
  std::vector<std::string> errors;
  EXPECT_TRUE(bind_checks(entries, errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("does not apply to static analysis"), std::string::npos) << errors[0];
}

TEST(CheckRegistry, ARuleHasOneCheck) {
  const CheckEntry entries[] = {entry("sync-in-loop"), entry("sync-in-loop")};
  std::vector<std::string> errors;
  EXPECT_EQ(bind_checks(entries, errors).size(), 1u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "the rule 'sync-in-loop' has two checks");
}

}  // namespace
}  // namespace gpudiag::lint
