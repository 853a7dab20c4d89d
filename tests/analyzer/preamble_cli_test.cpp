// The shared preamble changes how fast gpulint parses, never what it reports:
// the same report, byte for byte, with --no-preamble, on snippet folders whose
// files share a command (a preamble is built only for those), and every
// finding still in the user's own file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

TEST(SharedPreamble, SameReportWithAndWithoutIt) {
  const std::string snippets = GPULINT_SNIPPETS;
  std::vector<std::string> args = {"--format=json", "-j", "2"};
  // A parse failure among them: its error must point where it did.
  for (const char* folder : {"/device-mismatch", "/float64-leak", "/memory-leak", "/parse"})
    args.push_back(snippets + folder);
  const LintRun shared = run_gpulint(args);
  args.push_back("--no-preamble");
  const LintRun plain = run_gpulint(args);
  ASSERT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_EQ(shared.exit_code, plain.exit_code) << shared.err;
  EXPECT_EQ(shared.out, plain.out);

  const auto report = nlohmann::json::parse(shared.out);
  ASSERT_GT(report.at("findings").size(), 20u);
  for (const auto& finding : report.at("findings")) {
    const std::string file = finding.at("location").at("file");
    EXPECT_EQ(file.rfind(snippets + "/", 0), 0u) << file;
  }
  EXPECT_EQ(count_rule(shared.out, "clang-diagnostic-error"), 1u);
}

}  // namespace
}  // namespace gpudiag::lint::test
