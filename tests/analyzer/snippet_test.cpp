// Each snippet under snippets/<rule-name>/ marks its expected findings on the
// line they belong to: `// CHECK: GD004` or `// expect: premature-free`
// (several separated by commas, each optionally followed by a remark). A
// marker names a rule of the catalogue by id or name; anything else, such as
// clang-diagnostic-error, is expected as written. snippets/training-step/
// holds one with several rules at once. Every .cu file below snippets/ is a
// case, so a new rule's folder is tested with no edit here, and every rule
// gpulint can see must have a folder that marks it. (The samples/
// are held to their expected.json by tests/samples.) The test runs the real gpulint
// with all checks on each file and fails on any missing or unexpected finding.
// A first line `// RUN-FLAGS: --default-stream per-thread` compiles the
// snippet with those nvcc options, through a compilation database (the path
// a real build's command takes).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpudiag/catalogue.h"
#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

// The id of the rule a marker names by id or name; what names no rule is kept
// as written.
std::string rule_id(const std::string& marked) {
  const Rule* rule = find_rule(marked);
  return rule != nullptr ? std::string(rule->id) : marked;
}

using Expectation = std::pair<unsigned, std::string>;  // line, rule id

std::set<Expectation> expected_findings(const std::string& path) {
  std::set<Expectation> expected;
  std::ifstream in(path);
  std::string line;
  for (unsigned number = 1; std::getline(in, line); ++number) {
    for (const std::string marker : {"// CHECK:", "// expect:"}) {
      size_t at = line.find(marker);
      if (at == std::string::npos) continue;
      std::stringstream list(line.substr(at + marker.size()));
      std::string item;
      while (std::getline(list, item, ',')) {
        item.erase(0, item.find_first_not_of(' '));
        item.resize(std::min(item.find_first_of(" \r"), item.size()));  // the id or name; a remark may follow
        if (item.empty()) continue;
        expected.emplace(number, rule_id(item));
      }
    }
  }
  return expected;
}

std::vector<std::string> snippet_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(GPULINT_SNIPPETS))
    if (entry.path().extension() == ".cu") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The nvcc options on a `// RUN-FLAGS:` first line, if any.
std::optional<std::string> run_flags(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  const std::string marker = "// RUN-FLAGS:";
  if (!std::getline(in, line) || line.rfind(marker, 0) != 0) return std::nullopt;
  return line.substr(marker.size());
}

LintRun lint_snippet(const std::string& path) {
  const auto flags = run_flags(path);
  if (!flags) return run_gpulint({"--format=json", "--fail-on=error", path});
  const std::string build = temp_dir("snippet_db");
  const std::string directory = std::filesystem::path(path).parent_path().string();
  const nlohmann::json database = nlohmann::json::array(
      {{{"directory", directory}, {"file", path}, {"command", "nvcc" + *flags + " -c " + path}}});
  write_file(build + "/compile_commands.json", database.dump());
  return run_gpulint({"-p", build, "--format=json", "--fail-on=error", path});
}

class Snippet : public ::testing::TestWithParam<std::string> {};

TEST_P(Snippet, FindsExactlyTheMarkedFindings) {
  const std::string path = GetParam();
  const LintRun run = lint_snippet(path);
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  std::set<Expectation> actual;
  std::map<Expectation, std::string> messages;
  for (const auto& finding : report.at("findings")) {
    const auto& location = finding.at("location");
    ASSERT_EQ(std::filesystem::path(location.at("file").get<std::string>()).filename(),
              std::filesystem::path(path).filename())
        << "finding outside the snippet: " << finding.dump();
    Expectation found{location.value("line", 0u), finding.at("rule").get<std::string>()};
    actual.insert(found);
    messages[found] = finding.at("message").get<std::string>();
  }
  const std::set<Expectation> expected = expected_findings(path);
  for (const auto& [line, rule] : expected)
    EXPECT_TRUE(actual.count({line, rule})) << path << ":" << line << ": expected " << rule << ", not reported";
  for (const auto& [line, rule] : actual)
    EXPECT_TRUE(expected.count({line, rule}))
        << path << ":" << line << ": unexpected " << rule << ": " << messages[{line, rule}];
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::filesystem::path path(info.param);
  std::string name = path.parent_path().filename().string() + "_" + path.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Analyzer, Snippet, ::testing::ValuesIn(snippet_files()), test_name);

// Every rule of the catalogue can be marked by its name as well as by its id.
TEST(SnippetMarkers, NameEveryRuleOfTheCatalogueByIdOrName) {
  std::string text;
  std::set<Expectation> wanted;
  unsigned line = 0;
  for (const Rule& rule : catalogue()) {
    text += "int by_name;  // expect: " + std::string(rule.name) + " (a remark)\n";
    wanted.emplace(++line, std::string(rule.id));
    text += "int by_id;  // CHECK: " + std::string(rule.id) + ", " + std::string(rule.name) + "\n";
    wanted.emplace(++line, std::string(rule.id));
  }
  text += "int broken;  // CHECK: clang-diagnostic-error\n";
  wanted.emplace(++line, "clang-diagnostic-error");
  const std::string path = temp_dir("snippet_markers") + "/markers.cu";
  write_file(path, text);
  EXPECT_EQ(expected_findings(path), wanted);
}

// A rule gpulint can see is held to snippets: snippets/<name>/ marks it at
// least once, so a new static rule cannot go untested.
TEST(SnippetFolders, EveryStaticRuleHasAFolderThatMarksIt) {
  const std::vector<std::string> files = snippet_files();
  for (const Rule& rule : catalogue()) {
    if (!rule.is_static) continue;
    const std::filesystem::path folder = std::filesystem::path(GPULINT_SNIPPETS) / rule.name;
    std::size_t marks = 0;
    for (const std::string& file : files) {
      if (std::filesystem::path(file).parent_path() != folder) continue;
      for (const auto& [line, id] : expected_findings(file)) marks += id == rule.id;
    }
    EXPECT_GT(marks, 0u) << rule_tag(rule) << ": no snippet in " << folder.string() << " marks it";
  }
}

}  // namespace
}  // namespace gpudiag::lint::test
