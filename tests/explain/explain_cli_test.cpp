// `gpudiag explain` and the top-level command line, run as users run them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_gpudiag.h"

namespace {

using gpudiag::testing::run_gpudiag;

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(ExplainCli, RuleById) {
  auto r = run_gpudiag("explain GD004");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "premature-free")) << r.out;
  EXPECT_FALSE(contains(r.out, "```"));
  EXPECT_FALSE(contains(r.out, "\x1b["));  // NO_COLOR
}

TEST(ExplainCli, RuleByName) {
  auto r = run_gpudiag("explain premature-free");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "GD004")) << r.out;
}

TEST(ExplainCli, CudaErrorNumber) {
  auto r = run_gpudiag("explain 700");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "cudaErrorIllegalAddress")) << r.out;
  EXPECT_TRUE(contains(r.out, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  EXPECT_TRUE(contains(r.out, "compute-sanitizer"));
}

TEST(ExplainCli, CudnnStatus) {
  auto r = run_gpudiag("explain CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "CUDNN_STATUS_BAD_PARAM (2000)")) << r.out;
}

TEST(ExplainCli, MessageInSeveralWords) {
  auto r = run_gpudiag("explain an illegal memory access was encountered");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "cudaErrorIllegalAddress (700)")) << r.out;
}

TEST(ExplainCli, GarbageExitsTwoWithSuggestions) {
  auto r = run_gpudiag("explain garbage");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "no rule or error matches 'garbage'")) << r.out;
  EXPECT_TRUE(contains(r.out, "GD004 premature-free"));
  auto typo = run_gpudiag("explain cudaErrorIlegalAddress");
  EXPECT_EQ(typo.status, 2);
  EXPECT_TRUE(contains(typo.out, "Closest matches:\n  cudaErrorIllegalAddress")) << typo.out;
}

TEST(ExplainCli, AmbiguousShortFormExitsTwo) {
  auto r = run_gpudiag("explain NOT_SUPPORTED");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.out, "CUBLAS_STATUS_NOT_SUPPORTED")) << r.out;
}

TEST(ExplainCli, Formats) {
  auto json = run_gpudiag("explain --format=json 700", false);
  EXPECT_EQ(json.status, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["code"], 700);
  auto md = run_gpudiag("explain --format markdown 700");
  EXPECT_TRUE(md.out.starts_with("# cudaErrorIllegalAddress")) << md.out;
  EXPECT_EQ(run_gpudiag("explain --format=xml 700").status, 2);
  auto unknown_json = run_gpudiag("explain --format=json garbage", false);
  EXPECT_EQ(unknown_json.status, 2);
  EXPECT_EQ(nlohmann::json::parse(unknown_json.out)["kind"], "unknown");
}

TEST(ExplainCli, ColourOnlyWhenAsked) {
  // Not a terminal (a pipe): no colour even without NO_COLOR.
  auto r = run_gpudiag("explain 700", true, "-u NO_COLOR");
  EXPECT_FALSE(contains(r.out, "\x1b["));
}

TEST(ExplainCli, ListNamesEveryRuleAndError) {
  auto r = run_gpudiag("explain --list");
  EXPECT_EQ(r.status, 0);
  for (std::string_view part : {"GD001 device-mismatch", "GD012 device-checkpoint", "cudaErrorIllegalAddress",
                                "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
                                "CUDNN_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_LICENSE_ERROR", "name only"}) {
    EXPECT_TRUE(contains(r.out, part)) << part;
  }
  auto json = nlohmann::json::parse(run_gpudiag("explain --list --format=json", false).out);
  EXPECT_EQ(json["rules"].size(), 12u);
  EXPECT_GT(json["errors"].size(), 190u);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_gpudiag("").status, 2);
  EXPECT_EQ(run_gpudiag("explain").status, 2);
  EXPECT_EQ(run_gpudiag("explain --bogus 700").status, 2);
  EXPECT_EQ(run_gpudiag("frobnicate").status, 2);
}

TEST(Cli, HelpForEverySubcommand) {
  auto root = run_gpudiag("--help");
  EXPECT_EQ(root.status, 0);
  EXPECT_TRUE(contains(root.out, "explain"));
  EXPECT_TRUE(contains(root.out, "doctor"));
  auto explain = run_gpudiag("explain --help");
  EXPECT_EQ(explain.status, 0);
  EXPECT_TRUE(contains(explain.out, "--format"));
  auto doctor = run_gpudiag("doctor --help");
  EXPECT_EQ(doctor.status, 0);
  EXPECT_TRUE(contains(doctor.out, "--json"));
}

}  // namespace
