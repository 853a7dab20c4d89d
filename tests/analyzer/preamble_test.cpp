// The shared preamble: which system headers the files of one command include
// at their top (preamble_scan.h), and the precompiled header built once for
// the CUDA files that share a command (shared_preamble.h).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "flags.h"
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

TEST(PreambleHeaders, KeepsTheTopSystemIncludesAndReadsTheUsersHeaders) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-top");
  write(dir + "/a.cu", "// a kernel\n/* two\n   lines */\n#include <stdio.h>\n#include \"common.h\"\n"
                       "#include <cuda_runtime.h>  // the runtime\n\n__global__ void k() {}\n"
                       "#include <vector>\n");
  write(dir + "/common.h", "#ifndef COMMON_H\n#define COMMON_H\n#pragma once\n#include <cublas_v2.h>\n#endif\n");
  write(dir + "/b.cu", "#include <cuda_runtime.h>\n#include <cooperative_groups.h>\n");
  PreambleHeaders headers;
  headers.add_file(dir + "/a.cu", {});
  headers.add_file(dir + "/b.cu", {});
  // common.h is the user's: read, never kept; <vector> comes after code.
  EXPECT_EQ(headers.headers(),
            (Headers{"<stdio.h>", "<cublas_v2.h>", "<cuda_runtime.h>", "<cooperative_groups.h>"}));
}

TEST(PreambleHeaders, LeavesOutAHeaderThatAnyFileIncludesAfterItsTop) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-late");
  write(dir + "/a.cu", "#include <math.h>\n#include \"late.h\"\n#include <cuda_bf16.h>\n");
  // After a #define, under an #if, and in a user header included late.
  write(dir + "/b.cu", "#define _USE_MATH_DEFINES\n#include <math.h>\n#if X\n#include <cuda_bf16.h>\n#endif\n");
  write(dir + "/c.cu", "#include <stdio.h>\nint x;\n#include \"late.h\"\n");
  write(dir + "/late.h", "#include <cuda_fp16.h>\n");
  PreambleHeaders headers;
  for (const char* file : {"/a.cu", "/b.cu", "/c.cu"}) headers.add_file(dir + file, {});
  EXPECT_EQ(headers.headers(), (Headers{"<stdio.h>"}));
}

TEST(PreambleHeaders, AnAngledIncludeFoundInAnIncludeFolderIsTheUsers) {
  const std::string dir = gpudiag::test::scratch_dir("preamble-idir");
  write(dir + "/src/k.cu", "#include <helper_cuda.h>\n#include \"quoted_system.h\"\n");
  write(dir + "/common/helper_cuda.h", "#include <cuda_runtime.h>\n");
  const IncludeSearch search = include_search({"clang++", "-I", "../common", "-iquote/q", dir + "/src/k.cu"},
                                              dir + "/src");
  ASSERT_EQ(search.user_dirs, (Headers{dir + "/common"}));
  ASSERT_EQ(search.quote_dirs, (Headers{"/q"}));
  PreambleHeaders headers;
  headers.add_file(dir + "/src/k.cu", search);
  EXPECT_EQ(headers.headers(), (Headers{"<cuda_runtime.h>", "\"quoted_system.h\""}));
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
