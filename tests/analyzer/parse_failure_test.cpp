// A file that does not parse, as clang-tidy reports it: an error at clang's
// first error, under clang-diagnostic-error, that fails the run while the
// other files are still checked; --allow-parse-errors (AllowParseErrors in
// .gpulint.yaml) makes it a note again.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

using nlohmann::json;
constexpr auto npos = std::string::npos;

const char* kMissingHeader = "#include \"missing.h\"\nvoid f() {}\n";
const char* kBug = R"(#include <cuda_runtime.h>
void leak_status(float* d) {
  cudaFree(d);
}
)";

// The findings of rule `rule` in a --format=json report.
json findings_of(const std::string& json_text, const std::string& rule) {
  json out = json::array();
  const json report = json::parse(json_text);  // kept alive: the loop reads into it
  for (const json& finding : report.at("findings"))
    if (finding.at("rule") == rule) out.push_back(finding);
  return out;
}

TEST(ParseFailure, IsAnErrorAtClangsFirstErrorAndTheOtherFilesAreChecked) {
  const std::string dir = temp_dir("parse-error");
  write_file(dir + "/broken.cu", kMissingHeader);
  write_file(dir + "/bug.cu", kBug);
  const LintRun text = run_gpulint({dir});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("broken.cu:1:10: error: 'missing.h' file not found [clang-diagnostic-error]\n"), npos)
      << text.out;
  EXPECT_NE(text.out.find("\n" + dir + "/broken.cu: note: this file did not parse cleanly (1 error)"), npos)
      << text.out;
  EXPECT_NE(text.out.find("bug.cu:3:3: warning:"), npos) << text.out;

  const LintRun run = run_gpulint({"--format=json", dir});
  const json parse = findings_of(run.out, "clang-diagnostic-error");
  ASSERT_EQ(parse.size(), 1u) << run.out;
  EXPECT_EQ(parse[0].at("severity"), "error");
  EXPECT_EQ(parse[0].at("message"), "'missing.h' file not found");
  EXPECT_EQ(parse[0].at("location"), (json{{"file", dir + "/broken.cu"}, {"line", 1}, {"column", 10}}));
  EXPECT_EQ(findings_of(run.out, "GD006").size(), 1u) << run.out;
}

TEST(ParseFailure, FailsTheRunWhateverFailOnSays) {
  const std::string dir = temp_dir("parse-fail-on");
  write_file(dir + "/broken.cu", kMissingHeader);
  for (const std::string level : {"note", "warning", "error"})
    EXPECT_EQ(run_gpulint({"--fail-on=" + level, dir + "/broken.cu"}).exit_code, 1) << level;
}

TEST(ParseFailure, AllowParseErrorsMakesItANote) {
  const std::string dir = temp_dir("parse-allowed");
  write_file(dir + "/src/broken.cu", kMissingHeader);
  const std::string file = dir + "/src/broken.cu";
  const LintRun allowed = run_gpulint({"--allow-parse-errors", file});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_NE(allowed.out.find("broken.cu:1:10: note: 'missing.h' file not found [clang-diagnostic-error]\n"), npos)
      << allowed.out;
  EXPECT_EQ(run_gpulint({"--allow-parse-errors", "--fail-on=note", file}).exit_code, 1);

  write_file(dir + "/.gpulint.yaml", "AllowParseErrors: true\n");
  const LintRun configured = run_gpulint({"--format=json", file});
  EXPECT_EQ(configured.exit_code, 0) << configured.err;
  const json parse = findings_of(configured.out, "clang-diagnostic-error");
  ASSERT_EQ(parse.size(), 1u) << configured.out;
  EXPECT_EQ(parse[0].at("severity"), "note");

  write_file(dir + "/src/.gpulint.yaml", "AllowParseErrors: false\n");
  EXPECT_EQ(run_gpulint({file}).exit_code, 1);
  EXPECT_EQ(run_gpulint({"--config", dir + "/.gpulint.yaml", file}).exit_code, 0);
}

TEST(ParseFailure, SarifHasTheResultAndDescribesTheRule) {
  const std::string dir = temp_dir("parse-sarif");
  write_file(dir + "/broken.cu", kMissingHeader);
  const LintRun run = run_gpulint({"--format=sarif", "-o", dir + "/out.sarif", dir + "/broken.cu"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  std::ifstream in(dir + "/out.sarif");
  const json log = json::parse(in);
  const json& results = log.at("runs")[0].at("results");
  ASSERT_EQ(results.size(), 1u) << log.dump(2);
  EXPECT_EQ(results[0].at("ruleId"), "clang-diagnostic-error");
  EXPECT_EQ(results[0].at("level"), "error");
  EXPECT_EQ(results[0].at("message").at("text"), "'missing.h' file not found");
  const json& region = results[0].at("locations")[0].at("physicalLocation").at("region");
  EXPECT_EQ(region.at("startLine"), 1);
  EXPECT_EQ(region.at("startColumn"), 10);
  const json& rule = log.at("runs")[0].at("tool").at("driver").at("rules").at(results[0].at("ruleIndex").get<size_t>());
  EXPECT_EQ(rule.at("id"), "clang-diagnostic-error");
  EXPECT_EQ(rule.at("defaultConfiguration").at("level"), "error");
  EXPECT_NE(rule.at("shortDescription").at("text").get<std::string>().find("did not parse"), npos) << rule.dump();
}

// As in clang-tidy, a comment cannot make a broken compile pass.
TEST(ParseFailure, NolintDoesNotHideIt) {
  const std::string dir = temp_dir("parse-nolint");
  write_file(dir + "/broken.cu", "// NOLINTNEXTLINE(clang-diagnostic-error)\n#include \"missing.h\"  // NOLINT\n");
  const LintRun run = run_gpulint({dir + "/broken.cu"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("broken.cu:2:10: error: 'missing.h' file not found [clang-diagnostic-error]"), npos)
      << run.out;
}

// A header that breaks two files is reported for each, its note at the file:
// each file's checks ran on what parsed.
TEST(ParseFailure, EachFileReportsItsOwn) {
  const std::string dir = temp_dir("parse-header");
  write_file(dir + "/bad.h", "int broken = not_declared;\n");
  write_file(dir + "/a.cu", "#include \"bad.h\"\n");
  write_file(dir + "/b.cu", "#include \"bad.h\"\n");
  const LintRun run = run_gpulint({"--format=json", dir + "/a.cu", dir + "/b.cu"});
  EXPECT_EQ(run.exit_code, 1);
  const json parse = findings_of(run.out, "clang-diagnostic-error");
  ASSERT_EQ(parse.size(), 2u) << run.out;
  for (const json& finding : parse)
    EXPECT_EQ(finding.at("location"), (json{{"file", dir + "/bad.h"}, {"line", 1}, {"column", 14}})) << run.out;
  EXPECT_EQ(parse[0].at("notes")[0].at("location").at("file"), dir + "/a.cu") << run.out;
  EXPECT_EQ(parse[1].at("notes")[0].at("location").at("file"), dir + "/b.cu") << run.out;
}

}  // namespace
}  // namespace gpudiag::lint::test
