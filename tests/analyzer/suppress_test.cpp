#include <gtest/gtest.h>

#include "suppress.h"

namespace gpudiag::lint {
namespace {

TEST(Suppress, NolintOnTheLine) {
  const std::string text = "a();\ncudaFree(p);  // NOLINT(GD004)\nb();  // NOLINT\nc();  // NOLINT(GD006)\n";
  EXPECT_TRUE(is_suppressed(text, 2, "GD004", "premature-free"));
  EXPECT_FALSE(is_suppressed(text, 2, "GD006", "unchecked-cuda-error"));
  EXPECT_TRUE(is_suppressed(text, 3, "GD006", "unchecked-cuda-error"));
  EXPECT_FALSE(is_suppressed(text, 4, "GD004", "premature-free"));
  EXPECT_FALSE(is_suppressed(text, 1, "GD004", "premature-free"));
}

TEST(Suppress, ByNameAndGlobAndList) {
  const std::string text = "x();  // NOLINT(premature-free)\ny();  // NOLINT(GD001, unsynced-*)\n";
  EXPECT_TRUE(is_suppressed(text, 1, "GD004", "premature-free"));
  EXPECT_TRUE(is_suppressed(text, 2, "GD003", "unsynced-transfer"));
  EXPECT_TRUE(is_suppressed(text, 2, "GD001", "device-mismatch"));
  EXPECT_FALSE(is_suppressed(text, 2, "GD004", "premature-free"));
}

TEST(Suppress, NextLineOnlyCoversTheNextLine) {
  const std::string text = "// NOLINTNEXTLINE(premature-free)\ncudaFree(p);\ncudaFree(q);\n";
  EXPECT_TRUE(is_suppressed(text, 2, "GD004", "premature-free"));
  EXPECT_FALSE(is_suppressed(text, 3, "GD004", "premature-free"));
  // NOLINTNEXTLINE is not a NOLINT for its own line.
  EXPECT_FALSE(is_suppressed(text, 1, "GD004", "premature-free"));
}

TEST(Suppress, BeginEndRegions) {
  const std::string text =
      "a();\n// NOLINTBEGIN(GD006)\nb();\nc();\n// NOLINTEND(GD006)\nd();\n// NOLINTBEGIN\ne();\n";
  EXPECT_FALSE(is_suppressed(text, 1, "GD006", "unchecked-cuda-error"));
  EXPECT_TRUE(is_suppressed(text, 3, "GD006", "unchecked-cuda-error"));
  EXPECT_TRUE(is_suppressed(text, 4, "GD006", "unchecked-cuda-error"));
  EXPECT_FALSE(is_suppressed(text, 4, "GD004", "premature-free"));
  EXPECT_FALSE(is_suppressed(text, 6, "GD006", "unchecked-cuda-error"));
  EXPECT_TRUE(is_suppressed(text, 8, "GD004", "premature-free"));
}

}  // namespace
}  // namespace gpudiag::lint
