// The clang-style text emitter: exact lines, snippets and carets, fix-its,
// notes, stacks, colour, and hostile strings.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "emit_test_support.h"
#include "gpudiag/emit.h"

namespace gpudiag {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string render(const std::vector<Finding>& findings, TextOptions options = {}) {
  std::ostringstream out;
  emit_text(out, findings, options);
  return out.str();
}

Finding finding(std::string file, unsigned line, unsigned column, std::string message = "buffer freed while a kernel may still use it",
                Severity severity = Severity::Error) {
  Finding f;
  f.rule_id = "GD004";
  f.severity = severity;
  f.message = std::move(message);
  f.location = {std::move(file), line, column};
  return f;
}

TEST(EmitText, LocationSeverityMessageAndRuleTag) {
  EXPECT_EQ(render({finding("/nonexistent/train.cu", 42, 5)}),
            "/nonexistent/train.cu:42:5: error: buffer freed while a kernel may still use it "
            "[GD004 premature-free]\n");
}

TEST(EmitText, SeverityWords) {
  EXPECT_EQ(render({finding("/nonexistent/a.cu", 1, 1, "m", Severity::Warning)}),
            "/nonexistent/a.cu:1:1: warning: m [GD004 premature-free]\n");
  EXPECT_EQ(render({finding("/nonexistent/a.cu", 1, 1, "m", Severity::Note)}),
            "/nonexistent/a.cu:1:1: note: m [GD004 premature-free]\n");
}

TEST(EmitText, MissingColumnAndMissingLine) {
  EXPECT_EQ(render({finding("/nonexistent/a.cu", 7, 0, "m")}), "/nonexistent/a.cu:7: error: m [GD004 premature-free]\n");
  EXPECT_EQ(render({finding("/nonexistent/a.cu", 0, 0, "m")}), "/nonexistent/a.cu: error: m [GD004 premature-free]\n");
}

TEST(EmitText, RuleTagComesFromTheCatalogueAndUnknownIdsPrintAsIs) {
  Finding by_name = finding("/nonexistent/a.cu", 1, 2, "m");
  by_name.rule_id = "premature-free";
  EXPECT_THAT(render({by_name}), HasSubstr("[GD004 premature-free]"));
  Finding unknown = finding("/nonexistent/a.cu", 1, 2, "m");
  unknown.rule_id = "GD999";
  EXPECT_EQ(render({unknown}), "/nonexistent/a.cu:1:2: error: m [GD999]\n");
  unknown.rule_id.clear();
  EXPECT_EQ(render({unknown}), "/nonexistent/a.cu:1:2: error: m\n");
}

TEST(EmitText, RuntimeFindingPrintsProgramNameAndSanitizerStyleFrames) {
  Finding f;
  f.rule_id = "GD004";
  f.severity = Severity::Error;
  f.message = "cudaFree of 0x7f0000 while kernel 'conv' is pending on stream 2";
  f.stack = {{"train_step", "train", "/src/train.cu", 42, 0x4011d6},
             {"main", "", "", 0, 0},
             {"", "libc.so.6", "", 0, 0x7f12ab}};
  EXPECT_EQ(render({f}),
            "gpudiag: error: cudaFree of 0x7f0000 while kernel 'conv' is pending on stream 2 "
            "[GD004 premature-free]\n"
            "    #0 0x4011d6 in train_step /src/train.cu:42 (train)\n"
            "    #1 0x0 in main\n"
            "    #2 0x7f12ab (libc.so.6)\n");
  TextOptions options;
  options.program_name = "gpulint";
  EXPECT_THAT(render({f}, options), ::testing::StartsWith("gpulint: error: "));
}

TEST(EmitText, SnippetWithCaretUnderTheColumn) {
  testing::ScratchDir dir;
  const std::string file = dir.write("train.cu", "void f() {\n  cudaFree(buf);\n}\n");
  EXPECT_EQ(render({finding(file, 2, 3, "m")}),
            file + ":2:3: error: m [GD004 premature-free]\n"
                   "    2 |   cudaFree(buf);\n"
                   "      |   ^\n");
  // Column past the end of the line: the caret sits just after the text.
  EXPECT_EQ(render({finding(file, 3, 9, "m")}),
            file + ":3:9: error: m [GD004 premature-free]\n"
                   "    3 | }\n"
                   "      |  ^\n");
}

TEST(EmitText, SnippetWithoutColumnHasNoCaret) {
  testing::ScratchDir dir;
  const std::string file = dir.write("a.cu", "x\n");
  EXPECT_EQ(render({finding(file, 1, 0, "m")}), file + ":1: error: m [GD004 premature-free]\n    1 | x\n");
}

TEST(EmitText, WideLineNumbersWidenTheGutter) {
  testing::ScratchDir dir;
  std::string text;
  for (int i = 1; i <= 12345; ++i) text += i == 12345 ? "  target();\n" : "\n";
  const std::string file = dir.write("big.cu", text);
  EXPECT_EQ(render({finding(file, 12345, 3, "m")}),
            file + ":12345:3: error: m [GD004 premature-free]\n"
                   " 12345 |   target();\n"
                   "       |   ^\n");
}

TEST(EmitText, TabsExpandAndTheCaretFollows) {
  testing::ScratchDir dir;
  const std::string file = dir.write("tab.cu", "\tx =\ty;\n");
  // Byte column 6 is 'y': tab to 8, "x =" to 11, tab to 16.
  EXPECT_EQ(render({finding(file, 1, 6, "m")}),
            file + ":1:6: error: m [GD004 premature-free]\n"
                   "    1 |         x =     y;\n"
                   "      |                 ^\n");
}

TEST(EmitText, CaretCountsCharactersNotBytesAndWideCharactersTakeTwoColumns) {
  testing::ScratchDir dir;
  // "Größe" has two 2-byte characters, 日本 are 3 bytes and 2 columns each.
  const std::string line = "s(\"Größe 日本\", v);";
  const std::string file = dir.write("utf8.cu", line + "\n");
  const auto v_byte = static_cast<unsigned>(line.find('v')) + 1;
  const std::string out = render({finding(file, 1, v_byte, "m")});
  // s("Größe 日本", : 3 + 5 + 1 + 4 + 3 = 16 columns before v.
  EXPECT_THAT(out, HasSubstr("    1 | " + line + "\n      | " + std::string(16, ' ') + "^\n"));
}

TEST(EmitText, ControlCharactersAndInvalidBytesInTheSourceAreShownNotSent) {
  testing::ScratchDir dir;
  const std::string file = dir.write("ctl.cu", std::string("a\x1b[31mb\xff c\n"));
  const std::string out = render({finding(file, 1, 10, "m")});
  // "a<U+001B>[31mb<FF> c": byte 10 is 'c' at display column 19.
  EXPECT_THAT(out, HasSubstr("    1 | a<U+001B>[31mb<FF> c\n      | " + std::string(19, ' ') + "^\n"));
  EXPECT_THAT(out, Not(HasSubstr("\x1b")));
}

TEST(EmitText, CrLfLineEndingsAreNotShown) {
  testing::ScratchDir dir;
  const std::string file = dir.write("crlf.cu", "one\r\ntwo\r\n");
  EXPECT_THAT(render({finding(file, 2, 1, "m")}), HasSubstr("    2 | two\n      | ^\n"));
}

TEST(EmitText, LongLinesShowAWindowAroundTheCaret) {
  testing::ScratchDir dir;
  std::string line(5000, 'a');
  line[3999] = 'X';
  const std::string file = dir.write("long.cu", line + "\n");
  const std::string out = render({finding(file, 1, 4000, "m")});
  std::istringstream lines(out);
  std::string header, source, caret;
  std::getline(lines, header);
  std::getline(lines, source);
  std::getline(lines, caret);
  EXPECT_LT(source.size(), 200u);
  EXPECT_THAT(source, ::testing::StartsWith("    1 | ..."));
  EXPECT_THAT(source, ::testing::EndsWith("..."));
  const auto at = caret.find('^');
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(source[at], 'X');
}

TEST(EmitText, UnreadableOrShortFilesGiveNoSnippetAndNoError) {
  testing::ScratchDir dir;
  const std::string file = dir.write("short.cu", "only line\n");
  EXPECT_EQ(render({finding(file, 5, 1, "m")}), file + ":5:1: error: m [GD004 premature-free]\n");
  const std::string folder = dir.path().string();
  EXPECT_EQ(render({finding(folder, 1, 1, "m")}), folder + ":1:1: error: m [GD004 premature-free]\n");
  EXPECT_EQ(render({finding("/dev/zero", 1, 1, "m")}), "/dev/zero:1:1: error: m [GD004 premature-free]\n");
}

TEST(EmitText, ShowSourceOffPrintsNoSnippet) {
  testing::ScratchDir dir;
  const std::string file = dir.write("a.cu", "x\n");
  TextOptions options;
  options.show_source = false;
  EXPECT_EQ(render({finding(file, 1, 1, "m")}, options), file + ":1:1: error: m [GD004 premature-free]\n");
}

TEST(EmitText, FixItUnderlinesTheRangeAndShowsTheReplacement) {
  testing::ScratchDir dir;
  const std::string file = dir.write("fix.cu", "  cudaFree(buf);\n");
  Finding f = finding(file, 1, 3, "m");
  f.fix = FixIt{{file, 1, 3}, {file, 1, 11}, "cudaFreeAsync"};
  EXPECT_EQ(render({f}),
            file + ":1:3: error: m [GD004 premature-free]\n"
                   "    1 |   cudaFree(buf);\n"
                   "      |   ^~~~~~~~\n"
                   "      |   cudaFreeAsync\n");
}

TEST(EmitText, FixItElsewhereUsesClangsParseableForm) {
  testing::ScratchDir dir;
  const std::string file = dir.write("fix.cu", "a\nb\n");
  Finding f = finding(file, 1, 1, "m");
  f.fix = FixIt{{file, 2, 1}, {file, 2, 2}, "say \"hi\"\n"};
  EXPECT_EQ(render({f}),
            file + ":1:1: error: m [GD004 premature-free]\n"
                   "    1 | a\n"
                   "      | ^\n"
                   "fix-it:\"" + file + "\":{2:1-2:2}:\"say \\\"hi\\\"\\n\"\n");
  // Without a readable file the fix is still printed.
  Finding g = finding("/nonexistent/x.cu", 3, 4, "m");
  g.fix = FixIt{{"/nonexistent/x.cu", 3, 4}, {}, "cudaStreamSynchronize(s);"};
  EXPECT_EQ(render({g}),
            "/nonexistent/x.cu:3:4: error: m [GD004 premature-free]\n"
            "fix-it:\"/nonexistent/x.cu\":{3:4-3:4}:\"cudaStreamSynchronize(s);\"\n");
}

TEST(EmitText, NotesFollowWithTheirOwnSnippetAndStack) {
  testing::ScratchDir dir;
  const std::string file = dir.write("n.cu", "alloc();\nuse();\nfree();\n");
  Finding f = finding(file, 3, 1, "freed while in use");
  f.notes.push_back({"the kernel that uses it was launched here", {file, 2, 1}, {}});
  f.notes.push_back({"allocated here", {}, {{"alloc", "train", "/src/a.cu", 9, 0x10}}});
  f.notes.push_back({"no place at all", {}, {}});
  EXPECT_EQ(render({f}),
            file + ":3:1: error: freed while in use [GD004 premature-free]\n"
                   "    3 | free();\n"
                   "      | ^\n" +
                file + ":2:1: note: the kernel that uses it was launched here\n"
                       "    2 | use();\n"
                       "      | ^\n"
                       "gpudiag: note: allocated here\n"
                       "    #0 0x10 in alloc /src/a.cu:9 (train)\n"
                       "gpudiag: note: no place at all\n");
}

TEST(EmitText, SeveralFindingsReadTheSameFileOnce) {
  testing::ScratchDir dir;
  const std::string file = dir.write("m.cu", "a\nb\n");
  const std::string out = render({finding(file, 2, 1, "first"), finding(file, 1, 1, "second")});
  EXPECT_EQ(out, file + ":2:1: error: first [GD004 premature-free]\n    2 | b\n      | ^\n" + file +
                     ":1:1: error: second [GD004 premature-free]\n    1 | a\n      | ^\n");
}

TEST(EmitText, ManyFilesAndRevisitsKeepTheirSnippets) {
  testing::ScratchDir dir;
  std::vector<Finding> findings;
  for (int i = 0; i < 100; ++i) {
    findings.push_back(finding(dir.write("f" + std::to_string(i) + ".cu", "line of file " + std::to_string(i) + "\n"), 1, 1, "m"));
  }
  findings.push_back(findings.front());  // read again after being evicted
  const std::string out = render(findings);
  EXPECT_THAT(out, HasSubstr("    1 | line of file 99\n"));
  EXPECT_THAT(out, ::testing::EndsWith("    1 | line of file 0\n      | ^\n"));
}

TEST(EmitText, EachCallReadsTheFileAsItIsNow) {
  testing::ScratchDir dir;
  const std::string file = dir.write("edit.cu", "before\n");
  EXPECT_THAT(render({finding(file, 1, 1, "m")}), HasSubstr("| before\n"));
  dir.write("edit.cu", "after\n");
  EXPECT_THAT(render({finding(file, 1, 1, "m")}), HasSubstr("| after\n"));
}

TEST(EmitText, HostileMessagesStayReadableAndHarmless) {
  std::string message = "quote \" back \\ tab\tnl\nesc\x1b[2J nul";
  message += '\0';
  message += " end";
  const std::string out = render({finding("/nonexistent/a.cu", 1, 1, message)});
  EXPECT_EQ(out, "/nonexistent/a.cu:1:1: error: quote \" back \\ tab\tnl\nesc<U+001B>[2J nul<U+0000> end "
                 "[GD004 premature-free]\n");
  EXPECT_THAT(out, Not(HasSubstr("\x1b")));
}

TEST(EmitText, NonAsciiIsKeptAndInvalidUtf8BecomesReplacementCharacters) {
  Finding f = finding("/nonexistent/Größe 日本.cu", 1, 1, "Größe 日本 \xff\xfe bad");
  const std::string out = render({f});
  EXPECT_EQ(out, "/nonexistent/Größe 日本.cu:1:1: error: Größe 日本 \xEF\xBF\xBD\xEF\xBF\xBD bad [GD004 premature-free]\n");
}

TEST(EmitText, NoEscapesWithoutColour) {
  testing::ScratchDir dir;
  const std::string file = dir.write("c.cu", "x;\n");
  EXPECT_THAT(render({finding(file, 1, 1, "m", Severity::Warning)}), Not(HasSubstr("\033[")));
}

TEST(EmitText, ColourUsesClangsEscapes) {
  testing::ScratchDir dir;
  const std::string file = dir.write("c.cu", "  cudaFree(p);\n");
  Finding f = finding(file, 1, 3, "msg", Severity::Warning);
  f.fix = FixIt{{file, 1, 3}, {file, 1, 11}, "cudaFreeAsync"};
  f.notes.push_back({"see here", {file, 1, 3}, {}});
  TextOptions options;
  options.color = true;
  const std::string out = render({f}, options);
  EXPECT_THAT(out, ::testing::StartsWith("\033[1m" + file + ":1:3: \033[0m\033[0;1;35mwarning: \033[0m\033[1mmsg "
                                         "[GD004 premature-free]\033[0m\n"));
  EXPECT_THAT(out, HasSubstr("      |   \033[0;1;32m^~~~~~~~\033[0m\n"));
  EXPECT_THAT(out, HasSubstr("      |   \033[0;32mcudaFreeAsync\033[0m\n"));
  EXPECT_THAT(out, HasSubstr("\033[0;1;36mnote: \033[0msee here\033[0m\n"));
  f.severity = Severity::Error;
  EXPECT_THAT(render({f}, options), HasSubstr("\033[0;1;31merror: "));
}

class Environment {
 public:
  Environment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~Environment() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(WantColor, FalseForPipesAndFiles) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Environment no_color("NO_COLOR", nullptr);
  EXPECT_FALSE(want_color(fds[1]));
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(want_color(-1));
}

TEST(WantColor, TerminalsGetColourUnlessNoColorIsNonEmptyOrTermIsDumb) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) GTEST_SKIP() << "no pseudo-terminal available";
  const int terminal = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  {
    Environment term("TERM", "xterm-256color");
    {
      Environment no_color("NO_COLOR", nullptr);
      EXPECT_TRUE(want_color(terminal));
    }
    {
      Environment no_color("NO_COLOR", "");
      EXPECT_TRUE(want_color(terminal));
    }
    {
      Environment no_color("NO_COLOR", "1");
      EXPECT_FALSE(want_color(terminal));
    }
    {
      Environment no_color("NO_COLOR", "false");  // any non-empty value
      EXPECT_FALSE(want_color(terminal));
    }
  }
  {
    Environment no_color("NO_COLOR", nullptr);
    Environment term("TERM", "dumb");
    EXPECT_FALSE(want_color(terminal));
  }
  close(terminal);
  close(master);
}

}  // namespace
}  // namespace gpudiag
