// The embedded catalogue (the rules/<name>.md files compiled in): every
// published rule, well formed, findable.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalogue_parse.h"
#include "catalogue_sources.h"
#include "gpudiag/catalogue.h"

namespace gpudiag {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Expected {
  std::string_view id;
  std::string_view name;
  Severity severity;
  bool is_static;
  bool is_runtime;
};

// The published rules, written out here rather than read from the catalogue
// under test, so that a rule added, renumbered, renamed, dropped or given
// another default severity or `applies` fails until it is written here too:
// rules/README.md promises that ids are stable once published and that new
// rules go at the end.
constexpr std::array<Expected, 12> kExpected{{
    {"GD001", "device-mismatch", Severity::Error, true, true},
    {"GD002", "float64-leak", Severity::Warning, true, true},
    {"GD003", "unsynced-transfer", Severity::Error, true, true},
    {"GD004", "premature-free", Severity::Error, true, true},
    {"GD005", "scalar-indexing", Severity::Warning, true, true},
    {"GD006", "unchecked-cuda-error", Severity::Warning, true, true},
    {"GD007", "memory-leak", Severity::Warning, true, true},
    {"GD008", "out-of-memory", Severity::Error, false, true},
    {"GD009", "pageable-async-copy", Severity::Warning, true, true},
    {"GD010", "sync-in-loop", Severity::Warning, true, true},
    {"GD011", "launch-bound", Severity::Note, false, true},
    {"GD012", "device-checkpoint", Severity::Warning, true, false},
}};

constexpr std::array<std::string_view, 6> kSections{
    "## What goes wrong", "## What you see",    "## Why",
    "## How to fix",      "## Bad and good code", "## What gpudiag reports"};

struct Heading {
  std::string text;
  std::size_t body_lines = 0;  // non-blank lines up to the next heading
};

// The headings of a markdown text outside code fences, each with the number
// of non-blank lines below it.
std::vector<Heading> headings(std::string_view markdown, int* fences) {
  std::vector<Heading> result;
  bool in_code = false;
  *fences = 0;
  while (!markdown.empty()) {
    const std::size_t end = std::min(markdown.find('\n'), markdown.size());
    const std::string_view line = markdown.substr(0, end);
    markdown.remove_prefix(end < markdown.size() ? end + 1 : end);
    if (line.starts_with("```")) {
      in_code = !in_code;
      ++*fences;
    }
    if (!in_code && line.starts_with("#") && !line.starts_with("```")) {
      result.push_back({std::string(line), 0});
    } else if (!result.empty() && line.find_first_not_of(" \t") != std::string_view::npos) {
      ++result.back().body_lines;
    }
  }
  return result;
}

TEST(Catalogue, EveryEmbeddedEntryIsWellFormed) {
  EXPECT_THAT(detail::embedded_catalogue_problems(), IsEmpty());
  EXPECT_EQ(catalogue().size(), detail::kCatalogueSourceCount);
}

TEST(Catalogue, HoldsThePublishedRulesInIdOrder) {
  const std::span<const Rule> rules = catalogue();
  ASSERT_EQ(rules.size(), kExpected.size());
  for (std::size_t i = 0; i < kExpected.size(); ++i) {
    SCOPED_TRACE(kExpected[i].id);
    EXPECT_EQ(rules[i].id, kExpected[i].id);
    EXPECT_EQ(rules[i].name, kExpected[i].name);
    EXPECT_EQ(rules[i].severity, kExpected[i].severity);
    EXPECT_EQ(rules[i].is_static, kExpected[i].is_static);
    EXPECT_EQ(rules[i].is_runtime, kExpected[i].is_runtime);
  }
}

TEST(Catalogue, SummariesAreOneSentence) {
  for (const Rule& rule : catalogue()) {
    SCOPED_TRACE(rule.id);
    EXPECT_FALSE(rule.summary.empty());
    EXPECT_LE(rule.summary.size(), 100u);
    EXPECT_TRUE(rule.summary.ends_with('.'));
    EXPECT_EQ(rule.summary.find('\n'), std::string_view::npos);
  }
}

TEST(Catalogue, EveryEntryHasTheRequiredSectionsInOrder) {
  for (const Rule& rule : catalogue()) {
    SCOPED_TRACE(rule.id);
    int fences = 0;
    const std::vector<Heading> found = headings(rule.markdown, &fences);
    EXPECT_EQ(fences % 2, 0) << "unbalanced ``` fences";
    ASSERT_EQ(found.size(), 1 + kSections.size());
    EXPECT_EQ(found[0].text, "# " + std::string(rule.name) + " (" + std::string(rule.id) + ")");
    for (std::size_t i = 0; i < kSections.size(); ++i) {
      EXPECT_EQ(found[i + 1].text, kSections[i]);
      EXPECT_GE(found[i + 1].body_lines, 3u) << kSections[i] << " is nearly empty";
    }
  }
}

TEST(Catalogue, EveryEntryShowsBadAndGoodCuda) {
  for (const Rule& rule : catalogue()) {
    SCOPED_TRACE(rule.id);
    const std::size_t code = rule.markdown.find("## Bad and good code");
    const std::size_t next = rule.markdown.find("## What gpudiag reports");
    ASSERT_NE(code, std::string_view::npos);
    ASSERT_NE(next, std::string_view::npos);
    const std::string_view section = rule.markdown.substr(code, next - code);
    std::size_t cuda_blocks = 0;
    for (std::size_t at = section.find("```cuda"); at != std::string_view::npos;
         at = section.find("```cuda", at + 1)) {
      ++cuda_blocks;
    }
    EXPECT_GE(cuda_blocks, 2u);
    EXPECT_THAT(std::string(section), HasSubstr("Bad"));
    EXPECT_THAT(std::string(section), HasSubstr("Good"));
  }
}

// "What gpudiag reports" describes exactly the tools the front matter names.
TEST(Catalogue, ReportSectionMatchesApplies) {
  for (const Rule& rule : catalogue()) {
    SCOPED_TRACE(rule.id);
    const std::size_t at = rule.markdown.find("## What gpudiag reports");
    ASSERT_NE(at, std::string_view::npos);
    const std::string section(rule.markdown.substr(at));
    EXPECT_EQ(section.find("**Static (gpulint)") != std::string::npos, rule.is_static);
    EXPECT_EQ(section.find("**Runtime (trace)") != std::string::npos, rule.is_runtime);
  }
}

// Every "GDnnn" an entry mentions is a rule of the catalogue.
TEST(Catalogue, CrossReferencesResolve) {
  for (const Rule& rule : catalogue()) {
    SCOPED_TRACE(rule.id);
    const std::string_view text = rule.markdown;
    for (std::size_t at = text.find("GD"); at != std::string_view::npos;
         at = text.find("GD", at + 2)) {
      const std::string_view candidate = text.substr(at, 5);
      const bool looks_like_id =
          candidate.size() == 5 &&
          std::all_of(candidate.begin() + 2, candidate.end(),
                      [](char c) { return c >= '0' && c <= '9'; });
      if (looks_like_id) {
        EXPECT_NE(find_rule(candidate), nullptr) << candidate;
      }
    }
  }
}

// The messages users paste into a search engine must be in the entry, verbatim.
TEST(Catalogue, QuotesTheRealErrorMessages) {
  const auto text = [](std::string_view name) {
    const Rule* rule = find_rule(name);
    return rule != nullptr ? std::string(rule->markdown) : std::string();
  };
  EXPECT_THAT(text("device-mismatch"),
              HasSubstr("Expected all tensors to be on the same device, but found at least two "
                        "devices, cuda:0 and cpu!"));
  EXPECT_THAT(text("device-mismatch"), HasSubstr("an illegal memory access was encountered"));
  EXPECT_THAT(text("float64-leak"), HasSubstr("expected scalar type Float but found Double"));
  EXPECT_THAT(text("premature-free"), HasSubstr("cudaErrorIllegalAddress"));
  EXPECT_THAT(text("scalar-indexing"), HasSubstr("Scalar indexing is disallowed."));
  EXPECT_THAT(text("scalar-indexing"), HasSubstr("no method matching"));
  EXPECT_THAT(text("out-of-memory"), HasSubstr("CUDA out of memory. Tried to allocate"));
  EXPECT_THAT(text("out-of-memory"), HasSubstr("cudaErrorMemoryAllocation"));
  EXPECT_THAT(text("unchecked-cuda-error"), HasSubstr("invalid program counter"));
}

TEST(FindRule, ById) {
  const Rule* rule = find_rule("GD004");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule->name, "premature-free");
  EXPECT_EQ(rule, &catalogue()[3]);
}

TEST(FindRule, IdIgnoresCase) {
  EXPECT_EQ(find_rule("gd004"), find_rule("GD004"));
  EXPECT_EQ(find_rule("Gd011"), find_rule("GD011"));
  ASSERT_NE(find_rule("gd011"), nullptr);
  EXPECT_EQ(find_rule("gd011")->name, "launch-bound");
}

TEST(FindRule, ByName) {
  for (const Expected& e : kExpected) {
    const Rule* rule = find_rule(e.name);
    ASSERT_NE(rule, nullptr) << e.name;
    EXPECT_EQ(rule->id, e.id);
  }
}

TEST(FindRule, UnknownGivesNull) {
  EXPECT_EQ(find_rule(""), nullptr);
  EXPECT_EQ(find_rule("GD013"), nullptr);
  EXPECT_EQ(find_rule("GD000"), nullptr);
  EXPECT_EQ(find_rule("GD04"), nullptr);
  EXPECT_EQ(find_rule("premature"), nullptr);
  EXPECT_EQ(find_rule("premature-free "), nullptr);
  EXPECT_EQ(find_rule("GD004 premature-free"), nullptr);
}

TEST(FindRuleNamed, FindsTheExactNameOnly) {
  ASSERT_NE(find_rule_named("premature-free"), nullptr);
  EXPECT_EQ(find_rule_named("premature-free")->id, "GD004");
  EXPECT_EQ(find_rule_named("GD004"), nullptr);
  EXPECT_EQ(find_rule_named("Premature-Free"), nullptr);
  EXPECT_EQ(find_rule_named("premature"), nullptr);
  EXPECT_EQ(find_rule_named(""), nullptr);
}

TEST(RuleTag, IsIdSpaceName) {
  const Rule* rule = find_rule("premature-free");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule_tag(*rule), "GD004 premature-free");
  for (const Rule& r : catalogue()) {
    EXPECT_EQ(rule_tag(r), std::string(r.id) + " " + std::string(r.name));
  }
}

}  // namespace
}  // namespace gpudiag
