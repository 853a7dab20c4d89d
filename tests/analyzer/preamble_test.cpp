// The shared preamble: which system headers the files of one command include
// at their top (preamble_scan.h), and the precompiled header built once for
// the CUDA files that share a command (shared_preamble.h).
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "flags.h"
#include "header_cost.h"
#include "preamble_plan.h"
#include "preamble_scan.h"
#include "scratch_dir.h"
#include "shared_preamble.h"

namespace gpudiag::lint {
namespace {
namespace fs = std::filesystem;
using Headers = std::vector<std::string>;

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(TopSystemIncludes, KeepsTheLeadingBlockAndReadsTheUsersHeadersThere) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-top");
  write(dir + "/a.cu", "// a kernel\n/* two\n   lines */\n#include <stdio.h>\n#include \"common.h\"\n"
                       "#include <cuda_runtime.h>  // the runtime\n#include <stdio.h>\n\n__global__ void k() {}\n"
                       "#include <vector>\n");
  write(dir + "/common.h", "#ifndef COMMON_H\n#define COMMON_H\n#pragma once\n#include <cublas_v2.h>\n#endif\n");
  // common.h is the user's: read, never kept; <vector> comes after code.
  EXPECT_EQ(top_system_includes(dir + "/a.cu", {}), (Headers{"<stdio.h>", "<cublas_v2.h>", "<cuda_runtime.h>"}));
}

TEST(TopSystemIncludes, EndAtADefineOrAConditional) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-end");
  write(dir + "/define.cu", "#include <math.h>\n#define _USE_MATH_DEFINES\n#include <cuda_bf16.h>\n");
  write(dir + "/if.cu", "#include <stdio.h>\n#if X\n#include <cuda_fp16.h>\n#endif\n");
  write(dir + "/ifndef.cu", "#ifndef NO_CG\n#include <cooperative_groups.h>\n#endif\n");
  EXPECT_EQ(top_system_includes(dir + "/define.cu", {}), (Headers{"<math.h>"}));
  EXPECT_EQ(top_system_includes(dir + "/if.cu", {}), (Headers{"<stdio.h>"}));
  EXPECT_EQ(top_system_includes(dir + "/ifndef.cu", {}), (Headers{})) << "an #ifndef that is no include guard";
}

// cuda-samples' helper_functions.h: Windows warning settings between its
// guard and its includes. A conditional that could change anything after it
// (a #define, a #pragma pack, an #include) still ends the block.
TEST(TopSystemIncludes, ReadOnPastAConditionalOfMsvcWarningPragmasOnly) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-msvc");
  write(dir + "/helpers.h", "#ifndef HELPERS_H_\n#define HELPERS_H_\n\n#ifdef WIN32\n#pragma warning(disable : 4996)\n"
                            "#else\n#endif\n\n#include <math.h>\n#include <vector>\n#endif\n");
  write(dir + "/a.cu", "#include \"helpers.h\"\n#if defined(_MSC_VER)\n#pragma warning(push)\n#endif\n#include <stdio.h>\n");
  EXPECT_EQ(top_system_includes(dir + "/a.cu", {}), (Headers{"<math.h>", "<vector>", "<stdio.h>"}));
  write(dir + "/define.cu", "#ifdef WIN32\n#pragma warning(disable : 4996)\n#define NOMINMAX\n#endif\n#include <math.h>\n");
  write(dir + "/pack.cu", "#include <stdio.h>\n#ifdef WIN32\n#pragma pack(1)\n#endif\n#include <math.h>\n");
  write(dir + "/nested.cu", "#ifdef WIN32\n#ifdef X\n#pragma warning(push)\n#endif\n#endif\n#include <math.h>\n");
  write(dir + "/guard_then_code.h", "#ifndef G\n#pragma warning(push)\nint x;\n#endif\n#include <math.h>\n");
  EXPECT_EQ(top_system_includes(dir + "/define.cu", {}), (Headers{}));
  EXPECT_EQ(top_system_includes(dir + "/pack.cu", {}), (Headers{"<stdio.h>"}));
  EXPECT_EQ(top_system_includes(dir + "/nested.cu", {}), (Headers{}));
  EXPECT_EQ(top_system_includes(dir + "/guard_then_code.h", {}), (Headers{}));
}

TEST(TopSystemIncludes, AnAngledIncludeFoundInAnIncludeFolderIsTheUsers) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-idir");
  write(dir + "/src/k.cu", "#include <helper_cuda.h>\n#include \"quoted_system.h\"\n");
  write(dir + "/common/helper_cuda.h", "#include <cuda_runtime.h>\n");
  const HeaderSearchList search =
      header_search_list({"clang++", "-I", "../common", "-iquote/q", dir + "/src/k.cu"}, dir + "/src");
  ASSERT_EQ(search.quoted_only, 1u);
  ASSERT_EQ(search.user_end, 2u);
  ASSERT_EQ(Headers(search.dirs.begin(), search.dirs.begin() + 2), (Headers{"/q", dir + "/common"}));
  EXPECT_GT(search.dirs.size(), 2u) << "and the system folders after them";
  EXPECT_EQ(top_system_includes(dir + "/src/k.cu", search), (Headers{"<cuda_runtime.h>", "\"quoted_system.h\""}));
}

TEST(PlanPreambles, SharesTheHeadersThatSaveMostAmongTheFilesThatIncludeThemAll) {
  const PreamblePlan plan = plan_preambles({{"<a>", "<b>", "<c>"}, {"<b>", "<a>"}, {"<a>", "<b>", "<d>"}, {"<e>"}, {}});
  EXPECT_EQ(plan.preambles, (std::vector<Headers>{{"<a>", "<b>"}, {}}));
  EXPECT_EQ(plan.preamble_of, (std::vector<int>{0, 0, 0, 1, 1})) << "the two left share the wrapper's";
}

TEST(PlanPreambles, MoreHeadersForFewerFilesWhenThatSavesMore) {
  const PreamblePlan plan = plan_preambles({{"<a>", "<b>", "<c>", "<d>"}, {"<a>", "<b>", "<c>", "<d>"}, {"<a>"}});
  EXPECT_EQ(plan.preambles, (std::vector<Headers>{{"<a>", "<b>", "<c>", "<d>"}}));
  EXPECT_EQ(plan.preamble_of, (std::vector<int>{0, 0, -1})) << "a file left alone gets none";
  EXPECT_EQ(plan_preambles({{"<a>"}}).preamble_of, (std::vector<int>{-1}));
}

// Costs by header, summed over a set.
HeaderSetCost costs(std::map<std::string, std::uint64_t> by_header) {
  return [by_header](const Headers& headers) {
    std::uint64_t total = 0;
    for (const auto& header : headers) total += by_header.at(header);
    return total;
  };
}

// Thrust's device_vector.h takes seconds to parse, <stdio.h> next to nothing:
// two files that share the heavy header save more than five that share the
// light one.
TEST(PlanPreambles, AHeavyHeaderOfFewFilesOutweighsALightOneOfMany) {
  const std::vector<Headers> tops = {{"<stdio.h>"}, {"<stdio.h>"}, {"<stdio.h>"}, {"<stdio.h>", "<thrust.h>"},
                                     {"<stdio.h>", "<thrust.h>"}};
  const PreamblePlan plan = plan_preambles(tops, costs({{"<stdio.h>", 1}, {"<thrust.h>", 100}}));
  EXPECT_EQ(plan.preambles, (std::vector<Headers>{{"<stdio.h>"}, {"<stdio.h>", "<thrust.h>"}}));
  EXPECT_EQ(plan.preamble_of, (std::vector<int>{0, 0, 0, 1, 1}));
  const PreamblePlan by_count = plan_preambles(tops);
  EXPECT_EQ(by_count.preambles, (std::vector<Headers>{{"<stdio.h>"}})) << "counted, the five files' header wins";
}

// A file moves from the preamble it has to a larger one when that saves it
// more than building the larger one costs; a preamble every file left is
// not built. Numbered in the order of the files.
TEST(PlanPreambles, FilesMoveToALargerPreambleThatSavesThemMore) {
  std::vector<Headers> tops(10, Headers{"<cg.h>"});
  tops.insert(tops.end(), 3, Headers{"<cg.h>", "<thrust.h>"});
  const PreamblePlan moved = plan_preambles(tops, costs({{"<cg.h>", 10}, {"<thrust.h>", 20}}));
  EXPECT_EQ(moved.preambles, (std::vector<Headers>{{"<cg.h>"}, {"<cg.h>", "<thrust.h>"}}));
  std::vector<int> expected(10, 0);
  expected.insert(expected.end(), 3, 1);
  EXPECT_EQ(moved.preamble_of, expected);
  EXPECT_EQ(plan_preambles(tops, costs({{"<cg.h>", 10}, {"<thrust.h>", 2}})).preambles,
            (std::vector<Headers>{{"<cg.h>"}}))
      << "thrust.h saves three files less than parsing it once costs";
  // <a> first (six files), then each half moves to its own larger set.
  const std::vector<Headers> halves = {{"<a>", "<b>"}, {"<a>", "<b>"}, {"<a>", "<b>"},
                                       {"<a>", "<c>"}, {"<a>", "<c>"}, {"<a>", "<c>"}};
  const PreamblePlan emptied = plan_preambles(halves, costs({{"<a>", 10}, {"<b>", 10}, {"<c>", 10}}));
  EXPECT_EQ(emptied.preambles, (std::vector<Headers>{{"<a>", "<b>"}, {"<a>", "<c>"}}));
  EXPECT_EQ(emptied.preamble_of, (std::vector<int>{0, 0, 0, 1, 1, 1}));
}

// Clang argv for `file` as gpulint builds it without a database.
std::vector<std::string> command(const std::string& file, const std::vector<std::string>& extra = {}) {
  return default_command(file, default_tool_paths(""), extra);
}

// The bytes a header reaches through the command's search: -isystem and
// -I folders, headers beside their includer, #include_next to the next
// folder, each file once, and nothing of what the command pre-includes.
TEST(HeaderCosts, AreTheBytesOfTheFilesAHeaderReachesBeyondThePreIncludedOnes) {
  const std::string dir = gpudiag::test::scratch_dir("header-cost");
  const std::string kilobyte(1000, 'x');
  write(dir + "/sys/heavy.h", "#include <heavy/a.h>\n  #  include \"b.h\"\n#include <missing.h>\n");
  write(dir + "/sys/heavy/a.h", "#include <heavy/a.h>\n#include_next <next.h>\n//" + kilobyte + "\n");
  write(dir + "/sys/b.h", "#if 0\n#include <twice.h>\n#endif\n//" + kilobyte + "\n");
  write(dir + "/sys/next.h", "//" + kilobyte + kilobyte + "\n");
  write(dir + "/sys2/next.h", "//" + kilobyte + "\n");
  write(dir + "/sys2/twice.h", "//" + kilobyte + "\n");
  write(dir + "/user/pre.h", "#include <twice.h>\n");
  write(dir + "/a.cu", "");
  const std::vector<std::string> argv = {"clang++", "-x", "c++", "-fsyntax-only", "-isystem", dir + "/sys",
                                         "-isystem", dir + "/sys2", "-include", "user/pre.h", dir + "/a.cu"};
  HeaderCosts costs(header_search_list(argv, dir), dir);
  const auto size = [](const std::string& path) { return fs::file_size(path); };
  const std::uint64_t heavy = size(dir + "/sys/heavy.h") + size(dir + "/sys/heavy/a.h") + size(dir + "/sys/b.h") +
                              size(dir + "/sys2/next.h");
  EXPECT_EQ(costs.bytes({"<heavy.h>"}), heavy) << "twice.h is pre-included; sys/next.h is passed over";
  EXPECT_EQ(costs.bytes({"<heavy.h>", "<b.h>"}), heavy) << "b.h counted once";
  EXPECT_EQ(costs.bytes({"<twice.h>"}), 0u);
  EXPECT_EQ(costs.bytes({"<missing.h>"}), 0u);
  EXPECT_EQ(costs.bytes({"<next.h>"}), size(dir + "/sys/next.h")) << "the first found";
}

TEST(SharedPreambles, CudaFilesOfOneCommandShareOnePreamble) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-shared");
  for (const char* name : {"/a.cu", "/b.cu", "/alone.cu"})
    write(dir + name, "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n");
  write(dir + "/host.cpp", "int main() {}\n");
  write(dir + "/host2.cpp", "int f() { return 0; }\n");
  const std::vector<std::vector<std::string>> commands = {
      command(dir + "/a.cu"), command(dir + "/b.cu"), command(dir + "/alone.cu", {"-DALONE"}),
      command(dir + "/host.cpp"), command(dir + "/host2.cpp")};
  std::string folder;
  {
    SharedPreambles preambles(commands, std::vector<std::string>(commands.size(), dir), "");
    const std::string shared = preambles.preamble_for(0);
    ASSERT_FALSE(shared.empty()) << "two CUDA files of one command share a preamble";
    EXPECT_TRUE(fs::is_regular_file(shared));
    EXPECT_EQ(preambles.preamble_for(1), shared);
    EXPECT_EQ(preambles.headers_for(0), (Headers{"<cuda_runtime.h>"}));
    EXPECT_EQ(preambles.preamble_for(2), "") << "a command no other file has gets none";
    EXPECT_EQ(preambles.preamble_for(3), "") << "C++ files get none";
    EXPECT_EQ(preambles.preamble_for(4), "");
    folder = fs::path(shared).parent_path().string();
  }
  EXPECT_FALSE(fs::exists(folder)) << "the preambles are removed with the run";
}

TEST(SharedPreambles, AFileGetsOnlyHeadersItIncludesItself) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-own-headers");
  write(dir + "/sys/x.h", "#pragma once\n#define Complex 0\n");
  for (const char* name : {"/a.cu", "/b.cu"}) write(dir + name, "#include <x.h>\n__global__ void k() {}\n");
  for (const char* name : {"/c.cu", "/d.cu"}) write(dir + name, "typedef float Complex;\n");
  const std::vector<std::string> extra = {"-isystem", dir + "/sys"};
  std::vector<std::vector<std::string>> commands;
  for (const char* name : {"/a.cu", "/b.cu", "/c.cu", "/d.cu"}) commands.push_back(command(dir + name, extra));
  SharedPreambles preambles(commands, std::vector<std::string>(4, dir), "");
  EXPECT_EQ(preambles.headers_for(0), (Headers{"<x.h>"}));
  EXPECT_EQ(preambles.headers_for(1), (Headers{"<x.h>"}));
  EXPECT_EQ(preambles.headers_for(2), (Headers{})) << "c.cu would see x.h's macro";
  ASSERT_TRUE(preambles.has_preamble(2)) << "c.cu and d.cu share the wrapper's";
  const std::string with_x = preambles.preamble_for(0), wrapper_only = preambles.preamble_for(2);
  EXPECT_FALSE(with_x.empty());
  EXPECT_FALSE(wrapper_only.empty());
  EXPECT_NE(with_x, wrapper_only);
  EXPECT_EQ(preambles.preamble_for(3), wrapper_only);
}

TEST(SharedPreambles, OnlyGpulintsOwnIncludeMayBeInAPreamble) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-include");
  write(dir + "/a.cu", "__global__ void k() {}\n");
  write(dir + "/b.cu", "__global__ void k() {}\n");
  write(dir + "/own.h", "#pragma once\nint own;\n");
  write(dir + "/user.h", "int user;\n");
  auto both = [&](const std::string& header) {
    return std::vector<std::vector<std::string>>{command(dir + "/a.cu", {"-include", header}),
                                                 command(dir + "/b.cu", {"-include", header})};
  };
  const std::vector<std::string> dirs(2, dir);
  SharedPreambles own(both(dir + "/own.h"), dirs, dir + "/own.h");
  EXPECT_FALSE(own.preamble_for(0).empty());
  SharedPreambles user(both(dir + "/user.h"), dirs, dir + "/own.h");
  EXPECT_EQ(user.preamble_for(0), "") << "the user's -include would be in it";
}

TEST(SharedPreambles, NoneWhenClangCannotBuildIt) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-broken");
  write(dir + "/sys/broken.h", "#error this header does not compile\n");
  write(dir + "/a.cu", "#include <broken.h>\n");
  write(dir + "/b.cu", "#include <broken.h>\n");
  const std::vector<std::string> extra = {"-isystem", dir + "/sys"};
  SharedPreambles preambles({command(dir + "/a.cu", extra), command(dir + "/b.cu", extra)}, {dir, dir}, "");
  EXPECT_EQ(preambles.headers_for(0), (Headers{"<broken.h>"}));
  EXPECT_EQ(preambles.preamble_for(0), "");
  EXPECT_EQ(preambles.preamble_for(1), "");
}

TEST(SharedPreambles, AddsThePreambleBeforeTheSource) {
  EXPECT_EQ(with_preamble({"clang++", "-x", "cuda", "k.cu"}, "/t/p.pch"),
            (Headers{"clang++", "-x", "cuda", "-include-pch", "/t/p.pch", "k.cu"}));
  EXPECT_EQ(with_preamble({"clang++", "k.cu"}, ""), (Headers{"clang++", "k.cu"}));
}

}  // namespace
}  // namespace gpudiag::lint
