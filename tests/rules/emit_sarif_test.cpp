// The SARIF emitter: what GitHub code scanning requires, URIs, rule indexes,
// runtime stacks, notes, fix-its, fingerprints, strings; and, when the
// official schema can be had, validation against it (sarif_schema_check.h).
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emit_test_support.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "sarif_schema_check.h"

namespace gpudiag {
namespace {

using nlohmann::json;
using ::testing::Contains;

SarifOptions options_for(std::string base) {
  SarifOptions options;
  options.tool_version = "0.1.0";
  options.information_uri = "https://example.invalid/gpudiag";
  options.base_dir = std::move(base);
  return options;
}

Finding at(std::string file, unsigned line, unsigned column, std::string rule = "GD004",
           Severity severity = Severity::Error, std::string message = "freed while in use") {
  Finding f;
  f.rule_id = std::move(rule);
  f.severity = severity;
  f.message = std::move(message);
  f.location = {std::move(file), line, column};
  return f;
}

json sarif(const std::vector<Finding>& findings, const SarifOptions& options) {
  std::ostringstream out;
  emit_sarif(out, findings, options);
  return json::parse(out.str());  // strict: throws on invalid UTF-8 or syntax
}

const json& result0(const json& log) { return log["runs"][0]["results"][0]; }

TEST(EmitSarif, TopLevelAndDriverAsGitHubRequires) {
  const json log = sarif({at("/repo/src/train.cu", 3, 5)}, options_for("/repo"));
  EXPECT_EQ(log["$schema"], "https://json.schemastore.org/sarif-2.1.0.json");
  EXPECT_EQ(log["version"], "2.1.0");
  ASSERT_EQ(log["runs"].size(), 1u);
  const json& driver = log["runs"][0]["tool"]["driver"];
  EXPECT_EQ(driver["name"], "gpudiag");
  EXPECT_EQ(driver["version"], "0.1.0");
  EXPECT_EQ(driver["informationUri"], "https://example.invalid/gpudiag");
  EXPECT_EQ(log["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///repo/");
}

TEST(EmitSarif, OptionalDriverFieldsAreOmittedWhenEmpty) {
  SarifOptions options;
  options.base_dir = "/repo";
  const json log = sarif({}, options);
  const json& driver = log["runs"][0]["tool"]["driver"];
  EXPECT_FALSE(driver.contains("version"));
  EXPECT_FALSE(driver.contains("informationUri"));
  EXPECT_EQ(driver["rules"], json::array());
  EXPECT_EQ(log["runs"][0]["results"], json::array());
}

TEST(EmitSarif, InvocationSaysTheRunSucceededWithNoNotificationsByDefault) {
  const json log = sarif({at("/repo/a.cu", 1, 1)}, options_for("/repo"));
  const json& invocations = log["runs"][0]["invocations"];
  ASSERT_EQ(invocations.size(), 1u);
  EXPECT_EQ(invocations[0]["executionSuccessful"], true);
  EXPECT_FALSE(invocations[0].contains("toolExecutionNotifications"));
  EXPECT_FALSE(log["runs"][0]["tool"]["driver"].contains("notifications"));
}

TEST(EmitSarif, WarningsBecomeToolExecutionNotificationsWithDescriptors) {
  SarifOptions options = options_for("/repo");
  options.warnings = {{"dropped-events", "Events were dropped", "17 events were dropped while recording"},
                      {"unclean-stop", "The recording did not stop cleanly", "the process was killed"},
                      {"dropped-events", "Events were dropped", "5 more were dropped \xff"}};
  const json log = sarif({}, options);
  const json& invocation = log["runs"][0]["invocations"][0];
  EXPECT_EQ(invocation["executionSuccessful"], true);  // the analysis ran; its input was incomplete
  const json& notes = invocation["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0]["level"], "warning");
  EXPECT_EQ(notes[0]["message"]["text"], "17 events were dropped while recording");
  EXPECT_EQ(notes[1]["message"]["text"], "the process was killed");
  EXPECT_EQ(notes[2]["message"]["text"], "5 more were dropped \xef\xbf\xbd");  // invalid UTF-8 replaced
  // One descriptor per id, in first-use order; each notification points at its own.
  const json& descriptors = log["runs"][0]["tool"]["driver"]["notifications"];
  ASSERT_EQ(descriptors.size(), 2u);
  EXPECT_EQ(descriptors[0]["id"], "dropped-events");
  EXPECT_EQ(descriptors[0]["shortDescription"]["text"], "Events were dropped");
  EXPECT_EQ(descriptors[1]["id"], "unclean-stop");
  EXPECT_EQ(notes[0]["descriptor"], (json{{"id", "dropped-events"}, {"index", 0}}));
  EXPECT_EQ(notes[1]["descriptor"], (json{{"id", "unclean-stop"}, {"index", 1}}));
  EXPECT_EQ(notes[2]["descriptor"], (json{{"id", "dropped-events"}, {"index", 0}}));
}

TEST(EmitSarif, RuleDescriptorComesFromTheCatalogue) {
  const Rule* rule = find_rule("GD004");
  ASSERT_NE(rule, nullptr);
  const json log = sarif({at("/repo/a.cu", 1, 1)}, options_for("/repo"));
  const json& rules = log["runs"][0]["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 1u);
  const json& d = rules[0];
  EXPECT_EQ(d["id"], "GD004");
  EXPECT_EQ(d["name"], "premature-free");
  EXPECT_EQ(d["shortDescription"]["text"], std::string(rule->summary));
  const std::string full = d["fullDescription"]["text"];
  EXPECT_GT(full.size(), rule->summary.size());
  EXPECT_EQ(full.find('\n'), std::string::npos);
  EXPECT_EQ(d["help"]["text"], std::string(rule->markdown));
  EXPECT_EQ(d["help"]["markdown"], std::string(rule->markdown));
  EXPECT_EQ(d["defaultConfiguration"]["level"], "error");
  EXPECT_THAT(d["properties"]["tags"], Contains("gpu"));
  EXPECT_THAT(d["properties"]["tags"], Contains(rule->is_static ? "static-analysis" : "runtime"));
}

TEST(EmitSarif, EveryCatalogueRuleGetsACompleteDescriptor) {
  std::vector<Finding> findings;
  for (const Rule& rule : catalogue()) findings.push_back(at("/repo/a.cu", 1, 1, std::string(rule.id)));
  const json log = sarif(findings, options_for("/repo"));
  const json& rules = log["runs"][0]["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), catalogue().size());
  for (const json& d : rules) {
    SCOPED_TRACE(d["id"].get<std::string>());
    const Rule* rule = find_rule(d["id"].get<std::string>());
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(d["name"], std::string(rule->name));
    const std::string full = d["fullDescription"]["text"];
    EXPECT_FALSE(full.empty());
    EXPECT_EQ(full.find('\n'), std::string::npos);
    EXPECT_NE(full.back(), ':');  // a paragraph that introduced a list reads as a sentence
    EXPECT_EQ(d["help"]["markdown"], std::string(rule->markdown));
    EXPECT_EQ(d["defaultConfiguration"]["level"], std::string(to_string(rule->severity)));
  }
}

TEST(EmitSarif, RulesAreTheUsedOnesByIdAndRuleIndexPointsAtThem) {
  const std::string other = std::string(catalogue().front().id);
  std::vector<Finding> findings = {at("/repo/a.cu", 1, 1, "GD999"), at("/repo/b.cu", 2, 1, "premature-free"),
                                   at("/repo/c.cu", 3, 1, other), at("/repo/d.cu", 4, 1, "gd004")};
  const json log = sarif(findings, options_for("/repo"));
  const json& rules = log["runs"][0]["tool"]["driver"]["rules"];
  std::vector<std::string> ids;
  for (const json& r : rules) ids.push_back(r["id"]);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), (std::set<std::string>{"GD004", "GD999", other}));
  const json& results = log["runs"][0]["results"];
  ASSERT_EQ(results.size(), 4u);
  for (const json& r : results) {
    EXPECT_EQ(rules.at(r["ruleIndex"].get<std::size_t>())["id"], r["ruleId"]);
  }
  EXPECT_EQ(results[1]["ruleId"], "GD004");  // names and lower case resolve to the id
  EXPECT_EQ(results[3]["ruleId"], "GD004");
  EXPECT_EQ(results[0]["ruleId"], "GD999");
  const json& unknown = rules.at(results[0]["ruleIndex"].get<std::size_t>());
  EXPECT_THAT(unknown["shortDescription"]["text"].get<std::string>(), ::testing::HasSubstr("GD999"));
}

// gpulint's clang-diagnostic-error is described as the tool says, not as an
// id missing from the catalogue.
TEST(EmitSarif, ToolRulesDescribeIdsOutsideTheCatalogue) {
  SarifOptions options = options_for("/repo");
  options.tool_rules.push_back({"clang-diagnostic-error", "The file did not parse", Severity::Error});
  const json log = sarif({at("/repo/a.cu", 1, 10, "clang-diagnostic-error"), at("/repo/b.cu", 2, 1, "GD999")}, options);
  const json& rules = log["runs"][0]["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[1]["id"], "clang-diagnostic-error");  // ordered by id: "GD999" < "clang-..."
  EXPECT_EQ(rules[1]["shortDescription"]["text"], "The file did not parse");
  EXPECT_EQ(rules[1]["defaultConfiguration"]["level"], "error");
  EXPECT_THAT(rules[0]["shortDescription"]["text"].get<std::string>(), ::testing::HasSubstr("not in this"));
  EXPECT_EQ(result0(log)["ruleId"], "clang-diagnostic-error");
  EXPECT_EQ(result0(log)["ruleIndex"], 1);
}

TEST(EmitSarif, LevelsMapFromSeverity) {
  const json log = sarif({at("/r/a.cu", 1, 1, "GD004", Severity::Note), at("/r/a.cu", 1, 1, "GD004", Severity::Warning),
                          at("/r/a.cu", 1, 1, "GD004", Severity::Error)},
                         options_for("/r"));
  const json& results = log["runs"][0]["results"];
  EXPECT_EQ(results[0]["level"], "note");
  EXPECT_EQ(results[1]["level"], "warning");
  EXPECT_EQ(results[2]["level"], "error");
}

TEST(EmitSarif, ResultHasMessageAndPhysicalLocationRelativeToBase) {
  const json log = sarif({at("/repo/src/train.cu", 42, 5)}, options_for("/repo/"));
  const json& r = result0(log);
  EXPECT_EQ(r["message"]["text"], "freed while in use");
  ASSERT_EQ(r["locations"].size(), 1u);
  EXPECT_EQ(r["locations"][0]["physicalLocation"], json::parse(R"({
      "artifactLocation": {"uri": "src/train.cu", "uriBaseId": "SRCROOT"},
      "region": {"startLine": 42, "startColumn": 5}})"));
}

TEST(EmitSarif, ByteColumnsBecomeCodePointColumnsWhereTheLineIsReadable) {
  testing::ScratchDir dir;
  const std::string file = dir.write("u.cu", "s(\"Größe 日本\", v);\n");
  Finding f = at(file, 1, 21);  // byte column of 'v': 3 + 7 + 1 + 6 + 3 + 1
  f.fix = FixIt{{file, 1, 21}, {file, 1, 22}, "w"};
  const json log = sarif({f}, options_for(dir.path().string()));
  EXPECT_EQ(log["runs"][0]["columnKind"], "unicodeCodePoints");
  EXPECT_EQ(result0(log)["locations"][0]["physicalLocation"]["region"]["startColumn"], 15);
  const json& deleted = result0(log)["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"];
  EXPECT_EQ(deleted["startColumn"], 15);
  EXPECT_EQ(deleted["endColumn"], 16);
  // Unreadable file: the column is passed through.
  EXPECT_EQ(result0(sarif({at("/nonexistent/u.cu", 1, 22)}, options_for("/nonexistent")))["locations"][0]
                   ["physicalLocation"]["region"]["startColumn"],
            22);
}

TEST(EmitSarif, RelativeFilesResolveAgainstTheWorkingDirectory) {
  const std::string cwd = std::filesystem::current_path().string();
  const json log = sarif({at("src/./x/../a.cu", 1, 0)}, options_for(cwd));
  const json& loc = result0(log)["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "src/a.cu");
  EXPECT_EQ(loc["region"], json::parse(R"({"startLine": 1})"));
  // An empty base means the working directory.
  SarifOptions no_base;
  EXPECT_EQ(result0(sarif({at("src/a.cu", 1, 0)}, no_base))["locations"][0]["physicalLocation"]["artifactLocation"],
            json::parse(R"({"uri": "src/a.cu", "uriBaseId": "SRCROOT"})"));
}

TEST(EmitSarif, FilesOutsideTheBaseGetAbsoluteFileUris) {
  const json log = sarif({at("/usr/local/cuda/include/cuda_runtime.h", 7, 1), at("/repo/../elsewhere/b.cu", 2, 1),
                          at("/repository/c.cu", 2, 1)},
                         options_for("/repo"));
  const json& results = log["runs"][0]["results"];
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["artifactLocation"],
            json::parse(R"({"uri": "file:///usr/local/cuda/include/cuda_runtime.h"})"));
  EXPECT_EQ(results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///elsewhere/b.cu");
  // A sibling whose name starts like the base is not inside it.
  EXPECT_EQ(results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///repository/c.cu");
}

TEST(EmitSarif, UrisArePercentEncoded) {
  const json log = sarif({at("/repo/my src/Größe 日本#1%.cu", 1, 1), at("/other dir/a+b.cu", 1, 1)}, options_for("/repo"));
  const json& results = log["runs"][0]["results"];
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "my%20src/Gr%C3%B6%C3%9Fe%20%E6%97%A5%E6%9C%AC%231%25.cu");
  EXPECT_EQ(results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "file:///other%20dir/a%2Bb.cu");
  EXPECT_EQ(sarif({}, options_for("/my repo"))["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///my%20repo/");
}

Finding runtime_finding() {
  Finding f;
  f.rule_id = "GD004";
  f.severity = Severity::Error;
  f.message = "cudaFree(0x7f3a00000000) while kernel conv2d is pending on stream 3";
  f.stack = {{"cudaFree", "libcudart.so.13", "", 0, 0x7f3a12345678},
             {"train_step", "train", "/repo/src/train.cu", 88, 0x4011d6},
             {"main", "train", "/repo/src/main.cu", 12, 0x401000}};
  return f;
}

TEST(EmitSarif, RuntimeFindingIsLocatedAtItsInnermostFrameWithAFile) {
  const json log = sarif({runtime_finding()}, options_for("/repo"));
  const json& r = result0(log);
  EXPECT_EQ(r["locations"][0]["physicalLocation"], json::parse(R"({
      "artifactLocation": {"uri": "src/train.cu", "uriBaseId": "SRCROOT"}, "region": {"startLine": 88}})"));
  EXPECT_EQ(r["locations"][0]["logicalLocations"][0]["name"], "train_step");
  ASSERT_EQ(r["stacks"].size(), 1u);
  const json& frames = r["stacks"][0]["frames"];
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0]["module"], "libcudart.so.13");
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["address"]["absoluteAddress"], 0x7f3a12345678u);
  EXPECT_FALSE(frames[0]["location"]["physicalLocation"].contains("artifactLocation"));
  EXPECT_EQ(frames[0]["location"]["logicalLocations"][0]["name"], "cudaFree");
  EXPECT_EQ(frames[2]["location"]["physicalLocation"]["artifactLocation"]["uri"], "src/main.cu");
  EXPECT_EQ(frames[2]["location"]["physicalLocation"]["region"]["startLine"], 12);
}

TEST(EmitSarif, RuntimeFindingWithoutFilesUsesALogicalLocation) {
  Finding f = runtime_finding();
  for (Frame& frame : f.stack) frame.file.clear();
  const json r = result0(sarif({f}, options_for("/repo")));
  EXPECT_FALSE(r["locations"][0].contains("physicalLocation"));
  EXPECT_EQ(r["locations"][0]["logicalLocations"][0], json::parse(R"({"name": "cudaFree", "kind": "function"})"));
  f.stack.clear();
  const json bare = result0(sarif({f}, options_for("/repo")));
  ASSERT_EQ(bare["locations"].size(), 1u);
  EXPECT_TRUE(bare["locations"][0].contains("logicalLocations"));
  EXPECT_FALSE(bare.contains("stacks"));
}

TEST(EmitSarif, NotesBecomeRelatedLocationsStacksOrMessageText) {
  Finding f = at("/repo/a.cu", 5, 3);
  f.notes.push_back({"launched here", {"/repo/b.cu", 9, 2}, {}});
  f.notes.push_back({"allocated here", {}, {{"alloc", "train", "/repo/c.cu", 4, 0x10}}});
  f.notes.push_back({"freed by the caching allocator", {}, {{"release", "libgdrt.so", "", 0, 0x20}}});
  f.notes.push_back({"run with GDRT_SYNC=1 to confirm", {}, {}});
  const json r = result0(sarif({f}, options_for("/repo")));
  ASSERT_EQ(r["relatedLocations"].size(), 2u);
  EXPECT_EQ(r["relatedLocations"][0]["id"], 1);
  EXPECT_EQ(r["relatedLocations"][0]["message"]["text"], "launched here");
  EXPECT_EQ(r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"], "b.cu");
  EXPECT_EQ(r["relatedLocations"][0]["physicalLocation"]["region"], json::parse(R"({"startLine": 9, "startColumn": 2})"));
  EXPECT_EQ(r["relatedLocations"][1]["id"], 2);
  EXPECT_EQ(r["relatedLocations"][1]["physicalLocation"]["artifactLocation"]["uri"], "c.cu");
  ASSERT_EQ(r["stacks"].size(), 2u);
  EXPECT_EQ(r["stacks"][0]["message"]["text"], "allocated here");
  EXPECT_EQ(r["stacks"][1]["message"]["text"], "freed by the caching allocator");
  EXPECT_EQ(r["message"]["text"], "freed while in use\nnote: run with GDRT_SYNC=1 to confirm");
}

TEST(EmitSarif, FixItBecomesASarifFix) {
  Finding f = at("/repo/a.cu", 5, 3);
  f.fix = FixIt{{"/repo/a.cu", 5, 3}, {"/repo/a.cu", 5, 11}, "cudaFreeAsync"};
  const json r = result0(sarif({f}, options_for("/repo")));
  ASSERT_EQ(r["fixes"].size(), 1u);
  const json& change = r["fixes"][0]["artifactChanges"][0];
  EXPECT_EQ(change["artifactLocation"]["uri"], "a.cu");
  EXPECT_EQ(change["replacements"][0], json::parse(R"({
      "deletedRegion": {"startLine": 5, "startColumn": 3, "endLine": 5, "endColumn": 11},
      "insertedContent": {"text": "cudaFreeAsync"}})"));
  EXPECT_TRUE(r["fixes"][0]["description"].contains("text"));
}

std::string fingerprint(const json& log, std::size_t i = 0) {
  return log["runs"][0]["results"][i]["partialFingerprints"]["primaryLocationLineHash"];
}

TEST(EmitSarif, FingerprintsAreStableAndDistinguishFindings) {
  testing::ScratchDir dir;
  const std::string file = dir.write("src/a.cu", "void f() {\n  cudaFree(p);\n  cudaFree(q);\n}\n");
  const SarifOptions options = options_for(dir.path().string());
  const std::string first = fingerprint(sarif({at(file, 2, 3)}, options));
  EXPECT_THAT(first, ::testing::MatchesRegex("[0-9a-f]{16}:1"));
  EXPECT_EQ(fingerprint(sarif({at(file, 2, 3)}, options)), first);               // another run
  EXPECT_NE(fingerprint(sarif({at(file, 3, 3)}, options)), first);               // another line text
  EXPECT_NE(fingerprint(sarif({at(file, 2, 3, "GD001")}, options)), first);      // another rule
  // The same line moved down by an edit keeps its fingerprint; re-indenting too.
  dir.write("src/a.cu", "// header\n\nvoid f() {\n      cudaFree(p);\n}\n");
  EXPECT_EQ(fingerprint(sarif({at(file, 4, 7)}, options)), first);
  // The same file seen from another checkout location (base) keeps it too.
  testing::ScratchDir other;
  const std::string moved = other.write("src/a.cu", "void f() {\n  cudaFree(p);\n}\n");
  EXPECT_EQ(fingerprint(sarif({at(moved, 2, 3)}, options_for(other.path().string()))), first);
}

TEST(EmitSarif, DuplicateFindingsAreCountedApart) {
  const json log = sarif({at("/nonexistent/a.cu", 2, 3), at("/nonexistent/a.cu", 2, 3)}, options_for("/nonexistent"));
  const std::string a = fingerprint(log, 0);
  const std::string b = fingerprint(log, 1);
  EXPECT_EQ(a.substr(0, 16), b.substr(0, 16));
  EXPECT_EQ(a.substr(16), ":1");
  EXPECT_EQ(b.substr(16), ":2");
}

TEST(EmitSarif, UnreadableSourcesFingerprintTheMessageWithoutNumbers) {
  const SarifOptions options = options_for("/nonexistent");
  Finding f = runtime_finding();
  for (Frame& frame : f.stack) frame.file = frame.file.empty() ? "" : "/nonexistent" + frame.file.substr(5);
  const std::string first = fingerprint(sarif({f}, options));
  Finding rerun = f;  // another run: other addresses, other stream number
  rerun.message = "cudaFree(0x7f11c0000000) while kernel conv2d is pending on stream 7";
  EXPECT_EQ(fingerprint(sarif({rerun}, options)), first);
  Finding different = f;
  different.message = "cudaFree(0x7f3a00000000) while kernel relu is pending on stream 3";
  EXPECT_NE(fingerprint(sarif({different}, options)), first);
}

TEST(EmitSarif, HostileStringsStayValidJson) {
  std::string nasty = "quote \" backslash \\ newline\n tab\t bell\x07 Größe 日本 bad\xff\xc3";
  nasty += '\0';
  Finding f = at("/repo/dir \"q\"/\xff.cu", 1, 1, "GD004", Severity::Error, nasty);
  f.notes.push_back({nasty, {"/repo/n.cu", 1, 1}, {}});
  f.stack = {{nasty, nasty, "", 0, 1}};
  f.fix = FixIt{{"/repo/n.cu", 1, 1}, {}, nasty};
  json log;
  ASSERT_NO_THROW(log = sarif({f}, options_for("/repo")));
  const std::string r = "\xEF\xBF\xBD";
  std::string expected = "quote \" backslash \\ newline\n tab\t bell\x07 Größe 日本 bad" + r + r;
  expected += '\0';
  EXPECT_EQ(result0(log)["message"]["text"], expected);
  EXPECT_EQ(result0(log)["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "dir%20%22q%22/%FF.cu");
  EXPECT_NO_THROW((void)to_sarif(std::vector<Finding>{f}, options_for("/repo")).dump());
}

}  // namespace
}  // namespace gpudiag

namespace gpudiag {
namespace {

// Every shape of result the emitter makes, in one log.
std::vector<Finding> every_shape(const std::string& base) {
  std::vector<Finding> all;
  Finding with_fix = at(base + "/src/train.cu", 5, 3, "GD004", Severity::Error);
  with_fix.fix = FixIt{{base + "/src/train.cu", 5, 3}, {base + "/src/train.cu", 5, 11}, "cudaFreeAsync"};
  with_fix.notes.push_back({"launched here", {base + "/src/train.cu", 4, 1}, {}});
  with_fix.notes.push_back({"allocated here", {}, {{"alloc", "train", base + "/src/a.cu", 9, 0x10}}});
  with_fix.notes.push_back({"no place", {}, {}});
  all.push_back(with_fix);
  all.push_back(at("/usr/local/cuda/include/x.h", 1, 0, "GD999", Severity::Note));
  all.push_back(at(base + "/no line.cu", 0, 0, "GD004", Severity::Warning));
  all.push_back(runtime_finding());
  Finding no_files = runtime_finding();
  for (Frame& frame : no_files.stack) frame.file.clear();
  all.push_back(no_files);
  Finding nothing = runtime_finding();
  nothing.stack.clear();
  all.push_back(nothing);
  Finding hostile = at(base + "/Größe 日本/\xff.cu", 2, 2, "GD004", Severity::Error, "q\" \\ \n\t\x01 \xff");
  hostile.stack = {{"\xfe", "\x01", "", 0, ~0ull}};
  all.push_back(hostile);
  return all;
}

TEST(EmitSarifSchema, OutputValidatesAgainstTheOfficialSchema) {
  const testing::SarifSchema schema(std::filesystem::path(GPUDIAG_BINARY_DIR) / "sarif-schema");
  if (!schema.available()) GTEST_SKIP() << "SARIF schema validation unavailable: " << schema.why_not();
  testing::ScratchDir dir;
  const std::string file = (dir.path() / "log.sarif").string();
  {
    std::ofstream out(file);
    SarifOptions options = options_for("/repo");
    options.warnings = {{"dropped-events", "Events were dropped", "3 events were dropped"}, {"", "", "no id"}};
    emit_sarif(out, every_shape("/repo"), options);
  }
  EXPECT_EQ(schema.errors(file, dir.path()), "");
  // The validator is real: a log without the required "version" is rejected.
  json broken = json::parse(std::ifstream(file));
  broken.erase("version");
  std::ofstream(file, std::ios::trunc) << broken.dump();
  EXPECT_NE(schema.errors(file, dir.path()), "");
}

}  // namespace
}  // namespace gpudiag
