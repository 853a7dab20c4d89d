// The front-matter parser must reject every malformed entry with a reason,
// and the catalogue builder must skip such entries instead of crashing.
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalogue_parse.h"
#include "gpudiag/finding.h"

namespace gpudiag::detail {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr std::string_view kGood =
    "---\n"
    "id: GD004\n"
    "name: premature-free\n"
    "severity: error\n"
    "applies: static, runtime\n"
    "summary: Memory is freed while queued GPU work may still use it.\n"
    "---\n"
    "# premature-free (GD004)\n"
    "\n"
    "## What goes wrong\n";

// Replaces the first occurrence of `from` in kGood by `to`.
std::string good_with(std::string_view from, std::string_view to) {
  std::string text(kGood);
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  return text;
}

// Parses `markdown` as rules/<stem>.md, expects a rejection, returns the reason.
std::string rejection(std::string_view markdown, std::string_view stem = "premature-free") {
  std::string error;
  const std::optional<Rule> rule = parse_rule_entry(stem, markdown, &error);
  EXPECT_FALSE(rule.has_value()) << "accepted:\n" << markdown;
  EXPECT_FALSE(error.empty());
  return error;
}

TEST(ParseRuleEntry, ReadsEveryField) {
  std::string error;
  const std::optional<Rule> rule = parse_rule_entry("premature-free", kGood, &error);
  ASSERT_TRUE(rule.has_value()) << error;
  EXPECT_EQ(rule->id, "GD004");
  EXPECT_EQ(rule->name, "premature-free");
  EXPECT_EQ(rule->severity, Severity::Error);
  EXPECT_TRUE(rule->is_static);
  EXPECT_TRUE(rule->is_runtime);
  EXPECT_EQ(rule->summary, "Memory is freed while queued GPU work may still use it.");
  // The body without the front matter, from the title on.
  EXPECT_EQ(rule->markdown, "# premature-free (GD004)\n\n## What goes wrong\n");
}

TEST(ParseRuleEntry, AppliesAcceptsEitherKindAlone) {
  const auto runtime_only = parse_rule_entry("premature-free",
                                             good_with("static, runtime", "runtime"), nullptr);
  ASSERT_TRUE(runtime_only.has_value());
  EXPECT_FALSE(runtime_only->is_static);
  EXPECT_TRUE(runtime_only->is_runtime);

  const auto static_only = parse_rule_entry("premature-free",
                                            good_with("static, runtime", "static"), nullptr);
  ASSERT_TRUE(static_only.has_value());
  EXPECT_TRUE(static_only->is_static);
  EXPECT_FALSE(static_only->is_runtime);
}

TEST(ParseRuleEntry, ToleratesCrLfByteOrderMarkAndBlankLines) {
  std::string crlf;
  for (char c : kGood) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  std::string error;
  const auto from_crlf = parse_rule_entry("premature-free", crlf, &error);
  ASSERT_TRUE(from_crlf.has_value()) << error;
  EXPECT_EQ(from_crlf->summary, "Memory is freed while queued GPU work may still use it.");

  const std::string with_bom = "\xEF\xBB\xBF" + std::string(kGood);
  EXPECT_TRUE(parse_rule_entry("premature-free", with_bom, &error).has_value()) << error;

  const std::string spaced = good_with("---\n# premature", "---\n\n\n# premature");
  const auto rule = parse_rule_entry("premature-free", spaced, &error);
  ASSERT_TRUE(rule.has_value()) << error;
  EXPECT_TRUE(rule->markdown.starts_with("# premature-free (GD004)"));
}

TEST(ParseRuleEntry, ValuesMayContainColons) {
  const auto rule = parse_rule_entry(
      "premature-free",
      good_with("summary: Memory is freed while queued GPU work may still use it.",
                "summary: Freed too early: cudaFreeAsync on the wrong stream."),
      nullptr);
  ASSERT_TRUE(rule.has_value());
  EXPECT_EQ(rule->summary, "Freed too early: cudaFreeAsync on the wrong stream.");
}

TEST(ParseRuleEntry, SeverityIsCaseInsensitive) {
  const auto rule = parse_rule_entry("premature-free", good_with("error", "Warning"), nullptr);
  ASSERT_TRUE(rule.has_value());
  EXPECT_EQ(rule->severity, Severity::Warning);
}

TEST(ParseRuleEntry, RejectsMissingFrontMatter) {
  EXPECT_THAT(rejection("# premature-free (GD004)\n\n## What goes wrong\n"),
              HasSubstr("no front matter"));
  EXPECT_THAT(rejection(""), HasSubstr("no front matter"));
  EXPECT_THAT(rejection(" ---\nid: GD004\n"), HasSubstr("no front matter"));
}

TEST(ParseRuleEntry, RejectsTruncatedEntries) {
  // Cut inside the front matter: no closing fence.
  const std::string_view cut = kGood.substr(0, kGood.find("severity"));
  EXPECT_THAT(rejection(cut), HasSubstr("not closed"));
  EXPECT_THAT(rejection("---\n"), HasSubstr("not closed"));
  // Cut right after the front matter: no title, no body.
  const std::string_view headless = kGood.substr(0, kGood.find("# premature"));
  EXPECT_THAT(rejection(headless), HasSubstr("no text after the front matter"));
}

TEST(ParseRuleEntry, RejectsMissingKeys) {
  EXPECT_THAT(rejection(good_with("id: GD004\n", "")), HasSubstr("no 'id'"));
  EXPECT_THAT(rejection(good_with("severity: error\n", "")), HasSubstr("no 'severity'"));
  EXPECT_THAT(rejection(good_with("applies: static, runtime\n", "")), HasSubstr("no 'applies'"));
  EXPECT_THAT(rejection(good_with("summary: Memory is freed while queued GPU work may still use it.\n",
                                  "")),
              HasSubstr("no 'summary'"));
}

TEST(ParseRuleEntry, RejectsEmptyDuplicateAndUnknownKeys) {
  EXPECT_THAT(rejection(good_with("summary: Memory is freed while queued GPU work may still use it.",
                                  "summary:   ")),
              HasSubstr("'summary' is empty"));
  EXPECT_THAT(rejection(good_with("id: GD004\n", "id: GD004\nid: GD005\n")),
              HasSubstr("'id' given twice"));
  EXPECT_THAT(rejection(good_with("severity:", "severty:")), HasSubstr("unknown key 'severty'"));
  EXPECT_THAT(rejection(good_with("id: GD004", "id GD004")), HasSubstr("expected 'key: value'"));
}

TEST(ParseRuleEntry, RejectsBadIds) {
  for (const char* id : {"GD4", "GD0004", "XX004", "gd004", "GD00a", "GD 04"}) {
    EXPECT_THAT(rejection(good_with("GD004\nname", std::string(id) + "\nname")),
                HasSubstr("not of the form GDnnn"))
        << id;
  }
}

TEST(ParseRuleEntry, RejectsBadSeverity) {
  EXPECT_THAT(rejection(good_with("severity: error", "severity: fatal")),
              HasSubstr("severity 'fatal'"));
  EXPECT_THAT(rejection(good_with("severity: error", "severity: warn")),
              HasSubstr("severity 'warn'"));
}

TEST(ParseRuleEntry, RejectsNameOtherThanTheFileStem) {
  EXPECT_THAT(rejection(kGood, "use-after-free"),
              HasSubstr("differs from the file name 'use-after-free.md'"));
  EXPECT_THAT(rejection(good_with("name: premature-free", "name: Premature_Free"), "Premature_Free"),
              HasSubstr("not kebab-case"));
  EXPECT_THAT(rejection(good_with("name: premature-free", "name: premature--free"), "premature--free"),
              HasSubstr("not kebab-case"));
}

TEST(ParseRuleEntry, RejectsBadApplies) {
  EXPECT_THAT(rejection(good_with("static, runtime", "static, compile")),
              HasSubstr("'compile' is not 'static' or 'runtime'"));
  EXPECT_THAT(rejection(good_with("static, runtime", "static,")),
              HasSubstr("'' is not 'static' or 'runtime'"));
}

TEST(ParseRuleEntry, RejectsWrongTitle) {
  EXPECT_THAT(rejection(good_with("# premature-free (GD004)", "# Premature free")),
              HasSubstr("must start with '# premature-free (GD004)'"));
  EXPECT_THAT(rejection(good_with("# premature-free (GD004)", "# premature-free (GD005)")),
              HasSubstr("found '# premature-free (GD005)'"));
}

TEST(ParseRuleEntry, ErrorOutputIsOptional) {
  EXPECT_FALSE(parse_rule_entry("premature-free", "nonsense", nullptr).has_value());
}

std::string entry(std::string_view id, std::string_view name) {
  return "---\nid: " + std::string(id) + "\nname: " + std::string(name) +
         "\nseverity: note\napplies: runtime\nsummary: s.\n---\n# " + std::string(name) + " (" +
         std::string(id) + ")\n";
}

TEST(BuildCatalogue, OrdersByIdAndSkipsBrokenAndDuplicateEntries) {
  const std::string b = entry("GD002", "bravo");
  const std::string a = entry("GD001", "alpha");
  const std::string broken = "---\nid: GD003\n";
  const std::string duplicate = entry("GD001", "charlie");
  const std::vector<CatalogueSource> sources{
      {"bravo", b}, {"alpha", a}, {"broken", broken}, {"charlie", duplicate}};

  std::vector<std::string> problems;
  const std::vector<Rule> rules = build_catalogue(sources, &problems);
  ASSERT_THAT(rules, SizeIs(2));
  EXPECT_EQ(rules[0].id, "GD001");
  EXPECT_EQ(rules[0].name, "alpha");
  EXPECT_EQ(rules[1].id, "GD002");
  ASSERT_THAT(problems, SizeIs(2));
  EXPECT_THAT(problems[0], HasSubstr("rules/broken.md: front matter is not closed"));
  EXPECT_THAT(problems[1], HasSubstr("rules/charlie.md: id GD001 is already used by alpha"));
}

TEST(BuildCatalogue, SkipsDuplicateNames) {
  const std::string first = entry("GD001", "alpha");
  const std::string second = entry("GD002", "alpha");
  const std::vector<CatalogueSource> sources{{"alpha", first}, {"alpha", second}};
  std::vector<std::string> problems;
  const std::vector<Rule> rules = build_catalogue(sources, &problems);
  ASSERT_THAT(rules, SizeIs(1));
  EXPECT_EQ(rules[0].id, "GD001");
  EXPECT_THAT(problems, ElementsAre(HasSubstr("name alpha is already used by GD001")));
}

TEST(BuildCatalogue, EmptyInputGivesEmptyCatalogue) {
  std::vector<std::string> problems;
  EXPECT_THAT(build_catalogue({}, &problems), IsEmpty());
  EXPECT_THAT(problems, IsEmpty());
}

TEST(Severity, NamesRoundTrip) {
  for (Severity s : {Severity::Note, Severity::Warning, Severity::Error}) {
    EXPECT_EQ(parse_severity(to_string(s)), s);
  }
  EXPECT_EQ(to_string(Severity::Note), "note");
  EXPECT_EQ(to_string(Severity::Warning), "warning");
  EXPECT_EQ(to_string(Severity::Error), "error");
}

TEST(Severity, ParseIsCaseInsensitiveAndStrict) {
  EXPECT_EQ(parse_severity("ERROR"), Severity::Error);
  EXPECT_EQ(parse_severity("Note"), Severity::Note);
  EXPECT_EQ(parse_severity(""), std::nullopt);
  EXPECT_EQ(parse_severity("warn"), std::nullopt);
  EXPECT_EQ(parse_severity("errors"), std::nullopt);
  EXPECT_EQ(parse_severity(" error"), std::nullopt);
}

}  // namespace
}  // namespace gpudiag::detail
