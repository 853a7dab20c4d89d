// rules/README.md's table of rules is the catalogue's, and the generator
// that keeps it so writes what the table shows.
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpudiag/catalogue.h"
#include "rules_table.h"

namespace gpudiag::rules_readme {
namespace {

using ::testing::HasSubstr;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string kBegin(kTableBegin);
const std::string kEnd(kTableEnd);

TEST(RulesReadme, TableIsGeneratedFromTheCatalogue) {
  const std::string path = GPUDIAG_SOURCE_DIR "/rules/README.md";
  const std::string readme = read_text(path);
  ASSERT_FALSE(readme.empty()) << "cannot read " << path;
  const Spliced refreshed = with_table(readme, rules_table(catalogue()));
  ASSERT_TRUE(refreshed.error.empty()) << path << ": " << refreshed.error;
  if (refreshed.text != readme) {
    ADD_FAILURE() << "rules/README.md's table of rules differs from the entries (- README, + entries):\n"
                  << line_diff(current_table(readme), current_table(refreshed.text))
                  << "Refresh it with: " << kRefreshCommand;
  }
}

TEST(RulesTable, OneRowPerRuleUnderTheHeaderInTheGivenOrder) {
  const Rule rules[] = {
      {"GD101", "both-ways", Severity::Error, "Seen in source and in a trace.", true, true, ""},
      {"GD100", "trace-only", Severity::Note, "Only a trace shows it.", false, true, ""},
      {"GD102", "source-only", Severity::Warning, "Only gpulint sees it.", true, false, ""},
  };
  EXPECT_EQ(rules_table(rules),
            "| id | name | severity | static | runtime | what goes wrong |\n"
            "|---|---|---|---|---|---|\n"
            "| GD101 | [both-ways](both-ways.md) | error | yes | yes | Seen in source and in a trace. |\n"
            "| GD100 | [trace-only](trace-only.md) | note | | yes | Only a trace shows it. |\n"
            "| GD102 | [source-only](source-only.md) | warning | yes | | Only gpulint sees it. |\n");
}

TEST(RulesTable, APipeInASummaryStaysInItsCell) {
  const Rule rules[] = {{"GD100", "piped", Severity::Note, "Reads a | b.", false, true, ""}};
  EXPECT_THAT(rules_table(rules), HasSubstr("| Reads a \\| b. |\n"));
}

TEST(RulesTable, EveryRuleOfTheCatalogueHasItsRow) {
  const std::string table = rules_table(catalogue());
  for (const Rule& rule : catalogue()) {
    EXPECT_THAT(table, HasSubstr("| " + std::string(rule.id) + " | [" + std::string(rule.name) + "](")) << rule.id;
  }
}

TEST(WithTable, ReplacesOnlyTheTextBetweenTheMarkers) {
  const std::string readme = "# Title\n\n" + kBegin + "\n| old |\n| rows |\n" + kEnd + "\n\nAfter.\n";
  const Spliced spliced = with_table(readme, "| new |\n");
  EXPECT_EQ(spliced.error, "");
  EXPECT_EQ(spliced.text, "# Title\n\n" + kBegin + "\n\n| new |\n\n" + kEnd + "\n\nAfter.\n");
  EXPECT_EQ(current_table(spliced.text), "\n| new |\n\n");
  EXPECT_EQ(with_table(spliced.text, "| new |\n").text, spliced.text);
}

TEST(WithTable, FillsAnEmptyPlace) {
  const Spliced spliced = with_table(kBegin + "\n" + kEnd, "| row |\n");
  EXPECT_EQ(spliced.error, "");
  EXPECT_EQ(spliced.text, kBegin + "\n\n| row |\n\n" + kEnd);
}

TEST(WithTable, MissingOrRepeatedMarkersAreAnError) {
  EXPECT_THAT(with_table("| a table |\n" + kEnd + "\n", "x").error, HasSubstr("no line \"" + kBegin));
  EXPECT_THAT(with_table(kBegin + "\n| a table |\n", "x").error, HasSubstr("no line \"" + kEnd));
  EXPECT_THAT(with_table(kEnd + "\n" + kBegin + "\n", "x").error, HasSubstr("no line \"" + kEnd));
  EXPECT_THAT(with_table(kBegin + "\n" + kEnd + "\n" + kBegin + "\n" + kEnd + "\n", "x").error,
              HasSubstr("more than one line"));
  // A marker quoted inside a line is not a marker.
  EXPECT_THAT(with_table("see `" + kBegin + "`\n" + kEnd + "\n", "x").error, HasSubstr("no line"));
  EXPECT_EQ(current_table("no markers\n"), "");
}

TEST(LineDiff, MarksRemovedAndAddedLinesAmongTheKeptOnes) {
  EXPECT_EQ(line_diff("a\nb\nc\n", "a\nB\nc\nd\n"), "  a\n- b\n+ B\n  c\n+ d\n");
  EXPECT_EQ(line_diff("a\nb\n", "b\n"), "- a\n  b\n");
  EXPECT_EQ(line_diff("", "a\n"), "+ a\n");
  EXPECT_EQ(line_diff("a\n", "a\n"), "  a\n");
}

}  // namespace
}  // namespace gpudiag::rules_readme
