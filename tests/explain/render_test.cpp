// How explanations look: terminal text, markdown, JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "gpudiag/explain/render.h"

namespace gpudiag::explain {
namespace {

std::string rendered(std::string_view query, Format format, bool color = false) {
  std::ostringstream out;
  render(out, lookup(query), {format, color});
  return out.str();
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(MarkdownForTerminal, HeadingsUnderlinedWithoutColourBoldWithColour) {
  EXPECT_EQ(markdown_for_terminal("# Title\n## Sub\n", false), "Title\n=====\nSub\n---\n");
  const std::string colored = markdown_for_terminal("## Sub\n", true);
  EXPECT_EQ(colored, "\x1b[1mSub\x1b[0m\n");
}

TEST(MarkdownForTerminal, FencesAreDroppedAndCodeIndented) {
  EXPECT_EQ(markdown_for_terminal("text\n```cuda\nint x;\n```\nafter\n", false), "text\n    int x;\nafter\n");
}

TEST(MarkdownForTerminal, InlineSpans) {
  EXPECT_EQ(markdown_for_terminal("a **b** `c`\n", false), "a b `c`\n");
  EXPECT_EQ(markdown_for_terminal("`c`\n", true), "\x1b[36mc\x1b[0m\n");
  // An unclosed span does not leak colour into the next line.
  EXPECT_TRUE(markdown_for_terminal("**open\n", true).ends_with("\x1b[0m\n"));
}

TEST(MarkdownForTerminal, UnderlineCountsCharactersNotBytes) {
  EXPECT_EQ(markdown_for_terminal("# Ä\n", false), "Ä\n=\n");
}

TEST(RenderError, TextHasEverySectionAndNoEscapesWithoutColour) {
  const std::string text = rendered("700", Format::Text);
  EXPECT_TRUE(text.starts_with("cudaErrorIllegalAddress (700): CUDA runtime error\n")) << text;
  for (std::string_view part : {"\"an illegal memory access was encountered\"", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                "Sticky", "What it means", "Usual causes", "Rules to look at",
                                "GD004 premature-free", "What to run next", "compute-sanitizer --tool memcheck"}) {
    EXPECT_TRUE(contains(text, part)) << part << "\n" << text;
  }
  EXPECT_FALSE(contains(text, "\x1b["));
  EXPECT_TRUE(contains(rendered("700", Format::Text, true), "\x1b[1m"));
}

TEST(RenderError, NonStickyErrorsSayNothingAboutStickiness) {
  EXPECT_FALSE(contains(rendered("cudaErrorMemoryAllocation", Format::Text), "Sticky"));
}

TEST(RenderError, ReferenceRowsSayTheyAreOnlyReferences) {
  const std::string text = rendered("cudaErrorInvalidPitchValue", Format::Text);
  EXPECT_TRUE(contains(text, "no explanation of its own")) << text;
  EXPECT_TRUE(contains(text, "docs.nvidia.com"));
  EXPECT_FALSE(contains(text, "What it means"));
}

TEST(RenderError, DriverAliasInTheTitle) {
  EXPECT_TRUE(rendered("CUDA_ERROR_INVALID_PC", Format::Text)
                  .starts_with("CUDA_ERROR_INVALID_PC (718): CUDA driver error, the runtime's cudaErrorInvalidPc"));
}

TEST(RenderError, Markdown) {
  const std::string md = rendered("CUDNN_STATUS_BAD_PARAM", Format::Markdown);
  EXPECT_TRUE(md.starts_with("# CUDNN_STATUS_BAD_PARAM (2000): cuDNN error\n")) << md;
  EXPECT_TRUE(contains(md, "## Usual causes\n"));
  EXPECT_TRUE(contains(md, "- `CUDNN_LOGLEVEL_DBG=2"));
}

TEST(RenderError, Json) {
  const auto j = nlohmann::json::parse(rendered("700", Format::Json));
  EXPECT_EQ(j["kind"], "error");
  EXPECT_EQ(j["library"], "CUDA runtime");
  EXPECT_EQ(j["code"], 700);
  EXPECT_EQ(j["sticky"], true);
  EXPECT_EQ(j["driver_name"], "CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_TRUE(j["rules"].is_array());
  EXPECT_EQ(j["rules"][0]["id"], "GD004");
  EXPECT_FALSE(j["causes"].empty());
  const auto ref = nlohmann::json::parse(rendered("12", Format::Json));
  EXPECT_EQ(ref["explained"], false);
  EXPECT_TRUE(ref.contains("reference"));
}

TEST(RenderRule, TextMarkdownAndJson) {
  const std::string md = rendered("GD004", Format::Markdown);
  EXPECT_TRUE(contains(md, "premature-free"));
  EXPECT_TRUE(contains(md, "```"));
  const std::string text = rendered("GD004", Format::Text);
  EXPECT_FALSE(contains(text, "```"));
  EXPECT_FALSE(contains(text, "## "));
  const Rule* rule = find_rule("GD004");
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(contains(text, "GD004 premature-free  severity: " + std::string(to_string(rule->severity))))
      << text.substr(0, 300);
  EXPECT_TRUE(contains(text, "found by: "));
  const auto j = nlohmann::json::parse(rendered("premature-free", Format::Json));
  EXPECT_EQ(j["kind"], "rule");
  EXPECT_EQ(j["id"], "GD004");
  EXPECT_EQ(j["name"], "premature-free");
}

TEST(RenderUnknown, JsonListsCandidates) {
  const auto j = to_json(lookup("cudaErrorIlegalAddress"));
  EXPECT_EQ(j["kind"], "unknown");
  EXPECT_EQ(j["candidates"][0], "cudaErrorIllegalAddress");
  EXPECT_EQ(to_json(lookup("NOT_SUPPORTED"))["kind"], "ambiguous");
}

TEST(Format, Parse) {
  EXPECT_EQ(parse_format("json"), Format::Json);
  EXPECT_EQ(parse_format("markdown"), Format::Markdown);
  EXPECT_EQ(parse_format("text"), Format::Text);
  EXPECT_FALSE(parse_format("xml").has_value());
}

}  // namespace
}  // namespace gpudiag::explain
