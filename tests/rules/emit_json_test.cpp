// The JSON emitter: the documented schema exactly, omission of absent parts,
// and valid JSON whatever bytes a finding holds.
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpudiag/emit.h"

namespace gpudiag {
namespace {

using nlohmann::json;

std::string emitted(const std::vector<Finding>& findings) {
  std::ostringstream out;
  emit_json(out, findings);
  return out.str();
}

// Emits, then parses back with nlohmann's strict defaults (throws on invalid UTF-8).
json round_trip(const std::vector<Finding>& findings) { return json::parse(emitted(findings)); }

Finding static_finding() {
  Finding f;
  f.rule_id = "GD004";
  f.severity = Severity::Error;
  f.message = "buffer freed while a kernel may still use it";
  f.location = {"src/train.cu", 42, 5};
  return f;
}

TEST(EmitJson, StaticFindingHasExactlyTheDocumentedFields) {
  const json expected = json::parse(R"({"findings": [{
      "rule": "GD004", "name": "premature-free", "severity": "error",
      "message": "buffer freed while a kernel may still use it",
      "location": {"file": "src/train.cu", "line": 42, "column": 5}}]})");
  EXPECT_EQ(round_trip({static_finding()}), expected);
}

TEST(EmitJson, EmptyListIsAnEmptyArray) {
  EXPECT_EQ(round_trip({}), json::parse(R"({"findings": []})"));
  EXPECT_EQ(emitted({}), "{\n  \"findings\": []\n}\n");
}

TEST(EmitJson, OutputIsIndentedAndEndsWithANewline) {
  const std::string text = emitted({static_finding()});
  EXPECT_THAT(text, ::testing::StartsWith("{\n  \"findings\": [\n    {\n"));
  EXPECT_EQ(text.back(), '\n');
}

TEST(EmitJson, SeverityAndNameFollowTheFindingAndCatalogue) {
  Finding f = static_finding();
  f.severity = Severity::Note;
  f.rule_id = "premature-free";
  json j = to_json(f);
  EXPECT_EQ(j["severity"], "note");
  EXPECT_EQ(j["name"], "premature-free");
  f.severity = Severity::Warning;
  f.rule_id = "GD999";
  j = to_json(f);
  EXPECT_EQ(j["severity"], "warning");
  EXPECT_EQ(j["rule"], "GD999");
  EXPECT_FALSE(j.contains("name"));
}

TEST(EmitJson, PartialLocationsOmitUnknownLineAndColumn) {
  Finding f = static_finding();
  f.location = {"a.cu", 3, 0};
  EXPECT_EQ(to_json(f)["location"], json::parse(R"({"file": "a.cu", "line": 3})"));
  f.location = {"a.cu", 0, 0};
  EXPECT_EQ(to_json(f)["location"], json::parse(R"({"file": "a.cu"})"));
}

TEST(EmitJson, RuntimeFindingHasStackNotesAndNoLocation) {
  Finding f;
  f.rule_id = "GD004";
  f.severity = Severity::Error;
  f.message = "freed while pending";
  f.stack = {{"train_step", "train", "/src/train.cu", 42, 0x7fffdeadbeef1234},
             {"", "libc.so.6", "", 0, 0x29d90}};
  f.notes.push_back({"allocated here", {}, {{"alloc", "", "/src/a.cu", 9, 0x10}}});
  f.notes.push_back({"launched here", {"/src/b.cu", 3, 7}, {}});
  const json expected = json::parse(R"({
      "rule": "GD004", "name": "premature-free", "severity": "error", "message": "freed while pending",
      "stack": [
        {"address": "0x7fffdeadbeef1234", "function": "train_step", "file": "/src/train.cu", "line": 42, "module": "train"},
        {"address": "0x29d90", "module": "libc.so.6"}],
      "notes": [
        {"message": "allocated here", "stack": [{"address": "0x10", "function": "alloc", "file": "/src/a.cu", "line": 9}]},
        {"message": "launched here", "location": {"file": "/src/b.cu", "line": 3, "column": 7}}]})");
  EXPECT_EQ(to_json(f), expected);
  EXPECT_EQ(round_trip({f})["findings"][0], expected);
}

TEST(EmitJson, FixItHasBeginEndAndReplacement) {
  Finding f = static_finding();
  f.fix = FixIt{{"src/train.cu", 42, 5}, {"src/train.cu", 42, 13}, "cudaFreeAsync"};
  EXPECT_EQ(to_json(f)["fix"], json::parse(R"({
      "begin": {"file": "src/train.cu", "line": 42, "column": 5},
      "end": {"file": "src/train.cu", "line": 42, "column": 13},
      "replacement": "cudaFreeAsync"})"));
  // An insertion (no end) ends where it begins.
  f.fix = FixIt{{"src/train.cu", 43, 1}, {}, "cudaStreamSynchronize(s);\n"};
  EXPECT_EQ(to_json(f)["fix"]["end"], json::parse(R"({"file": "src/train.cu", "line": 43, "column": 1})"));
  EXPECT_EQ(round_trip({f})["findings"][0]["fix"]["replacement"], "cudaStreamSynchronize(s);\n");
}

TEST(EmitJson, QuotesBackslashesNewlinesTabsAndControlCharactersRoundTrip) {
  std::string nasty = "say \"hi\" C:\\path\nnext\tcol\r\x01\x1f\x7f";
  nasty += '\0';
  nasty += "after nul";
  Finding f = static_finding();
  f.message = nasty;
  f.location.file = "dir with \"quotes\"\\and\nnewline.cu";
  const std::string text = emitted({f});
  // Escaped, never raw: the document has no raw control bytes except its own newlines.
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    EXPECT_TRUE(byte >= 0x20 || ch == '\n' || ch == ' ') << "raw control byte " << int(byte);
  }
  EXPECT_THAT(text, ::testing::HasSubstr(R"(\"hi\")"));
  EXPECT_THAT(text, ::testing::HasSubstr(R"(\u0000after nul)"));
  const json back = json::parse(text);
  EXPECT_EQ(back["findings"][0]["message"].get<std::string>(), nasty);
  EXPECT_EQ(back["findings"][0]["location"]["file"].get<std::string>(), f.location.file);
}

TEST(EmitJson, NonAsciiIsPreservedAsUtf8) {
  Finding f = static_finding();
  f.message = "Größe 日本 ✓";
  f.location.file = "src/größe/日本.cu";
  const json back = round_trip({f});
  EXPECT_EQ(back["findings"][0]["message"], "Größe 日本 ✓");
  EXPECT_EQ(back["findings"][0]["location"]["file"], "src/größe/日本.cu");
}

TEST(EmitJson, InvalidUtf8NeverThrowsAndBecomesReplacementCharacters) {
  Finding f = static_finding();
  f.message = "bad \xff\xfe, truncated \xe6\x97, overlong \xc0\xaf, surrogate \xed\xa0\x80 end";
  f.location.file = "src/\x80.cu";
  f.stack = {{"fn\xc3", "mod\xff", "f\xfe.cu", 1, 1}};
  f.notes.push_back({"note \xff", {}, {}});
  f.fix = FixIt{{"src/\x80.cu", 1, 1}, {}, "x\xff"};
  std::string text;
  ASSERT_NO_THROW(text = emitted({f}));
  json back;
  ASSERT_NO_THROW(back = json::parse(text));
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  const json& got = back["findings"][0];
  EXPECT_EQ(got["message"], "bad " + r + r + ", truncated " + r + r + ", overlong " + r + r + ", surrogate " + r + r +
                                r + " end");
  EXPECT_EQ(got["location"]["file"], "src/" + r + ".cu");
  EXPECT_EQ(got["stack"][0]["function"], "fn" + r);
  EXPECT_EQ(got["stack"][0]["module"], "mod" + r);
  EXPECT_EQ(got["notes"][0]["message"], "note " + r);
  EXPECT_EQ(got["fix"]["replacement"], "x" + r);
  // to_json's value itself dumps with nlohmann's strict default.
  EXPECT_NO_THROW((void)to_json(f).dump());
}

TEST(EmitJson, EveryFindingIsListedInOrder) {
  Finding a = static_finding();
  Finding b = static_finding();
  b.rule_id = "GD999";
  b.message = "second";
  const json back = round_trip({a, b});
  ASSERT_EQ(back["findings"].size(), 2u);
  EXPECT_EQ(back["findings"][0]["rule"], "GD004");
  EXPECT_EQ(back["findings"][1]["message"], "second");
}

}  // namespace
}  // namespace gpudiag
