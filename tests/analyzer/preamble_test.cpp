// The shared preamble: which system headers the files of one command include
// at their top (preamble_scan.h), and the precompiled header built once for
// the CUDA files that share a command (shared_preamble.h).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "flags.h"
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

TEST(TopSystemIncludes, AnAngledIncludeFoundInAnIncludeFolderIsTheUsers) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-idir");
  write(dir + "/src/k.cu", "#include <helper_cuda.h>\n#include \"quoted_system.h\"\n");
  write(dir + "/common/helper_cuda.h", "#include <cuda_runtime.h>\n");
  const IncludeSearch search = include_search({"clang++", "-I", "../common", "-iquote/q", dir + "/src/k.cu"},
                                              dir + "/src");
  ASSERT_EQ(search.user_dirs, (Headers{dir + "/common"}));
  ASSERT_EQ(search.quote_dirs, (Headers{"/q"}));
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

// Clang argv for `file` as gpulint builds it without a database.
std::vector<std::string> command(const std::string& file, const std::vector<std::string>& extra = {}) {
  return default_command(file, default_tool_paths(""), extra);
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
