#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config.h"

namespace gpudiag::lint {
namespace {

TEST(Config, ParsesEveryKey) {
  std::string error;
  auto config = parse_config(R"(
Checks: '-*,premature-free,GD003'
Severity:
  premature-free: warning
  GD003: note
HeaderFilterRegex: 'include/mylib/.*'
ExtraArgs: ['-DFOO=1', '-Ithird_party']
ErrorCheckFunctions: [sync_check, checkLaunch]
AllowParseErrors: true
)", "test.yaml", error);
  ASSERT_TRUE(config) << error;
  EXPECT_EQ(config->checks, "-*,premature-free,GD003");
  EXPECT_EQ(config->severity.at("premature-free"), Severity::Warning);
  EXPECT_EQ(config->severity.at("GD003"), Severity::Note);
  EXPECT_EQ(config->header_filter.value(), "include/mylib/.*");
  EXPECT_EQ(config->extra_args, (std::vector<std::string>{"-DFOO=1", "-Ithird_party"}));
  EXPECT_EQ(config->error_check_functions, (std::vector<std::string>{"sync_check", "checkLaunch"}));
  EXPECT_TRUE(config->allow_parse_errors);
}

TEST(Config, ParseErrorsFailByDefault) {
  std::string error;
  auto config = parse_config("Checks: '*'\n", "x.yaml", error);
  ASSERT_TRUE(config) << error;
  EXPECT_FALSE(config->allow_parse_errors);
  EXPECT_FALSE(parse_config("AllowParseErrors: maybe\n", "x.yaml", error));
  EXPECT_EQ(error, "x.yaml: invalid .gpulint.yaml: line 1: invalid boolean");
}

TEST(Config, RejectsBadSeverity) {
  std::string error;
  EXPECT_FALSE(parse_config("Severity:\n  GD004: fatal\n", "x.yaml", error));
  EXPECT_NE(error.find("fatal"), std::string::npos);
}

TEST(Config, RejectsUnknownKeysAndBadShapes) {
  std::string error;
  EXPECT_FALSE(parse_config("Chekcs: '*'\n", "x.yaml", error));
  EXPECT_NE(error.find("x.yaml"), std::string::npos);
  EXPECT_FALSE(parse_config("ExtraArgs: 3: 4\n", "x.yaml", error));
  EXPECT_FALSE(parse_config("- a\n- b\n", "x.yaml", error));
}

TEST(Config, MissingFileIsAnError) {
  std::string error;
  EXPECT_FALSE(load_config("/nonexistent/.gpulint.yaml", error));
  EXPECT_NE(error.find("cannot read"), std::string::npos);
}

TEST(Config, FoundUpwardFromTheFile) {
  auto root = std::filesystem::temp_directory_path() / "gpulint_config_test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "a" / "b");
  std::ofstream(root / ".gpulint.yaml") << "Checks: '*'\n";
  EXPECT_EQ(find_config_for((root / "a" / "b" / "k.cu").string()), (root / ".gpulint.yaml").string());
  std::ofstream(root / "a" / ".gpulint.yaml") << "Checks: '-*'\n";
  EXPECT_EQ(find_config_for((root / "a" / "b" / "k.cu").string()), (root / "a" / ".gpulint.yaml").string());
  std::filesystem::remove_all(root);
}

TEST(Config, CheckGlobs) {
  EXPECT_TRUE(check_enabled("", "GD004", "premature-free"));
  EXPECT_FALSE(check_enabled("-*", "GD004", "premature-free"));
  EXPECT_TRUE(check_enabled("-*,premature-*", "GD004", "premature-free"));
  EXPECT_TRUE(check_enabled("-*,gd004", "GD004", "premature-free"));
  EXPECT_FALSE(check_enabled("*,-GD004", "GD004", "premature-free"));
  EXPECT_TRUE(check_enabled("*,-GD004,GD00*", "GD004", "premature-free"));
  EXPECT_FALSE(check_enabled(" -GD004 ", "GD004", "premature-free"));
}

TEST(Config, GlobsThatMatchNoCheck) {
  const std::vector<std::string> names = {"GD004", "premature-free", "GD006", "unchecked-cuda-error"};
  EXPECT_EQ(unmatched_globs("", names), std::vector<std::string>{});
  EXPECT_EQ(unmatched_globs("*,-GD004, premature-* ,gd006,-unchecked-cuda-error,", names), std::vector<std::string>{});
  EXPECT_EQ(unmatched_globs("-*,nonsense, -GD04,premature-freed,-", names),
            (std::vector<std::string>{"nonsense", "-GD04", "premature-freed", "-"}));
}

}  // namespace
}  // namespace gpudiag::lint
