// --checks and a config's Checks: a glob that names no check is a usage
// error (exit 2) that lists the checks, never silently ignored.
#include <string>

#include <gtest/gtest.h>

#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

constexpr auto npos = std::string::npos;

const char* kBug = R"(#include <cuda_runtime.h>
void leak_status(float* d) {
  cudaFree(d);
}
)";

// The list that follows the error: every check, by id and name.
void expect_check_list(const std::string& err) {
  EXPECT_NE(err.find("GD004  premature-free"), npos) << err;
  EXPECT_NE(err.find("GD006  unchecked-cuda-error"), npos) << err;
}

TEST(UnknownChecks, CommandLineGlobThatMatchesNoCheckIsAUsageError) {
  const std::string dir = temp_dir("checks-unknown");
  write_file(dir + "/bug.cu", kBug);
  const LintRun run = run_gpulint({"--checks=nonsense", dir + "/bug.cu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(run.err.starts_with("gpulint: error: --checks: no check matches 'nonsense'\n")) << run.err;
  expect_check_list(run.err);
  EXPECT_EQ(run.out, "");

  const LintRun several = run_gpulint({"--checks=-*,GD004,premature-fre,-sync-in-lop", dir + "/bug.cu"});
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_TRUE(several.err.starts_with("gpulint: error: --checks: no check matches 'premature-fre', '-sync-in-lop'\n"))
      << several.err;
}

TEST(UnknownChecks, GlobsThatMatchACheckStillSelect) {
  const std::string dir = temp_dir("checks-known");
  write_file(dir + "/bug.cu", kBug);
  EXPECT_EQ(run_gpulint({"--checks=GD004", dir + "/bug.cu"}).exit_code, 1);  // added to every check
  EXPECT_EQ(run_gpulint({"--checks=-*,GD004", dir + "/bug.cu"}).exit_code, 0);
  EXPECT_EQ(run_gpulint({"--checks=-GD006", dir + "/bug.cu"}).exit_code, 0);
  EXPECT_EQ(run_gpulint({"--checks=-*,unchecked-*", dir + "/bug.cu"}).exit_code, 1);
  EXPECT_EQ(run_gpulint({"--checks=*,-gd00*", dir + "/bug.cu"}).exit_code, 0);
}

TEST(UnknownChecks, ConfigChecksAreHeldToTheSameRule) {
  const std::string dir = temp_dir("checks-config");
  write_file(dir + "/src/bug.cu", kBug);
  write_file(dir + "/.gpulint.yaml", "Checks: '-*,GD04'\n");
  const LintRun found = run_gpulint({dir + "/src/bug.cu"});
  EXPECT_EQ(found.exit_code, 2);
  EXPECT_TRUE(found.err.starts_with("gpulint: error: " + dir + "/.gpulint.yaml: Checks: no check matches 'GD04'\n"))
      << found.err;
  expect_check_list(found.err);
  EXPECT_EQ(found.out, "");  // nothing was analysed with the wrong checks

  write_file(dir + "/forced.yaml", "Checks: 'float64'\n");
  const LintRun forced = run_gpulint({"--config", dir + "/forced.yaml", dir + "/src/bug.cu"});
  EXPECT_EQ(forced.exit_code, 2);
  EXPECT_NE(forced.err.find("forced.yaml: Checks: no check matches 'float64'"), npos) << forced.err;
}

}  // namespace
}  // namespace gpudiag::lint::test
