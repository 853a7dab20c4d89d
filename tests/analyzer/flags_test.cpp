// nvcc -> clang translation on compile commands shaped like the ones CMake
// and bear write for nvcc builds.
#include <algorithm>

#include <gtest/gtest.h>

#include "flags.h"

namespace gpudiag::lint {
namespace {

const ToolPaths kPaths{"/usr/lib/llvm-19/lib/clang/19", "/opt/compat", "/usr/local/cuda"};

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}
bool has_pair(const std::vector<std::string>& args, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == a && args[i + 1] == b) return true;
  return false;
}

TEST(Flags, CMakeNvccEntry) {
  const std::vector<std::string> command = {
      "/usr/local/cuda/bin/nvcc", "-forward-unknown-to-host-compiler", "-DUSE_CUDNN=1", "-I/src/include",
      "-isystem=/usr/local/cuda/targets/x86_64-linux/include", "-O3", "-DNDEBUG", "-std=c++17",
      "--generate-code=arch=compute_80,code=[compute_80,sm_80]", "-Xcompiler=-fPIC,-fvisibility=hidden",
      "--expt-relaxed-constexpr", "--extended-lambda", "-x", "cu", "-rdc=true", "-c", "/src/kernels/conv.cu",
      "-o", "CMakeFiles/k.dir/kernels/conv.cu.o"};
  const auto out = translate_command(command, "/src/kernels/conv.cu", kPaths);
  EXPECT_EQ(out.front(), "clang++");
  EXPECT_EQ(out.back(), "/src/kernels/conv.cu");
  EXPECT_TRUE(has_pair(out, "-x", "cuda"));
  EXPECT_TRUE(has(out, "--cuda-gpu-arch=sm_80"));
  EXPECT_TRUE(has(out, "-DUSE_CUDNN=1"));
  EXPECT_TRUE(has(out, "-I/src/include"));
  EXPECT_TRUE(has(out, "-std=c++17"));
  EXPECT_TRUE(has(out, "-fPIC"));
  EXPECT_TRUE(has(out, "-fvisibility=hidden"));
  EXPECT_TRUE(has(out, "--cuda-host-only"));
  EXPECT_TRUE(has(out, "--no-cuda-version-check"));
  EXPECT_TRUE(has(out, "--cuda-path=/usr/local/cuda"));
  EXPECT_TRUE(has_pair(out, "-idirafter", "/opt/compat"));
  EXPECT_TRUE(has_pair(out, "-resource-dir", "/usr/lib/llvm-19/lib/clang/19"));
  EXPECT_TRUE(has(out, "-fsyntax-only"));
  for (const char* gone : {"--expt-relaxed-constexpr", "--extended-lambda", "-rdc=true", "-c", "-o", "cu",
                           "-forward-unknown-to-host-compiler", "CMakeFiles/k.dir/kernels/conv.cu.o"})
    EXPECT_FALSE(has(out, gone)) << gone;
  EXPECT_EQ(std::count(out.begin(), out.end(), "/src/kernels/conv.cu"), 1);
}

TEST(Flags, BearNvccMakefileEntry) {
  const std::vector<std::string> command = {
      "nvcc", "-O3", "--use_fast_math", "-arch", "sm_86", "-gencode", "arch=compute_75,code=sm_75",
      "-Xcompiler", "-fopenmp", "-ccbin", "g++-12", "-lineinfo", "-Xptxas", "-v", "-lcublas", "-I", "include",
      "-DENABLE_BF16", "--default-stream", "per-thread", "train.cu", "-o", "train"};
  const auto out = translate_command(command, "train.cu", kPaths);
  EXPECT_TRUE(has(out, "--cuda-gpu-arch=sm_86"));
  EXPECT_TRUE(has_pair(out, "-x", "cuda"));
  EXPECT_TRUE(has(out, "-fopenmp"));
  EXPECT_TRUE(has_pair(out, "-I", "include"));
  EXPECT_TRUE(has(out, "-DENABLE_BF16"));
  EXPECT_TRUE(has(out, "-fgpu-default-stream=per-thread"));
  EXPECT_TRUE(has(out, "-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1"));
  for (const char* gone : {"--use_fast_math", "-ccbin", "g++-12", "-lineinfo", "-Xptxas", "-v", "-lcublas", "train",
                           "sm_86", "arch=compute_75,code=sm_75"})
    EXPECT_FALSE(has(out, gone)) << gone;
}

TEST(Flags, HostCompilerEntryKeepsItsFlagsAndDropsUnknownOnes) {
  const std::vector<std::string> command = {"/usr/bin/g++", "-std=gnu++20", "-fno-semantic-interposition-xyz",
                                            "-Wall", "-isystem", "/usr/local/cuda/include", "-c", "a.cpp",
                                            "-o", "a.o"};
  const auto out = translate_command(command, "a.cpp", kPaths);
  EXPECT_TRUE(has(out, "-std=gnu++20"));
  EXPECT_TRUE(has_pair(out, "-isystem", "/usr/local/cuda/include"));
  EXPECT_FALSE(has(out, "-fno-semantic-interposition-xyz"));
  EXPECT_FALSE(has(out, "--cuda-host-only"));
  EXPECT_FALSE(has(out, "a.o"));
}

TEST(Flags, GpuArchitectures) {
  EXPECT_EQ(clang_gpu_arch("sm_80"), "sm_80");
  EXPECT_EQ(clang_gpu_arch("compute_75"), "sm_75");
  EXPECT_EQ(clang_gpu_arch("arch=compute_90a,code=sm_90a"), "sm_90a");
  EXPECT_EQ(clang_gpu_arch("sm_120"), "");  // unknown to clang 19: left to the default
  EXPECT_EQ(clang_gpu_arch("native"), "");
}

TEST(Flags, DefaultsPerExtension) {
  const auto cu = default_command("/x/k.cu", kPaths);
  EXPECT_TRUE(has_pair(cu, "-x", "cuda"));
  EXPECT_TRUE(has(cu, "--cuda-host-only"));
  const auto cpp = default_command("/x/k.cpp", kPaths);
  EXPECT_TRUE(has(cpp, "-std=c++17"));
  EXPECT_FALSE(has(cpp, "--cuda-host-only"));
  EXPECT_TRUE(has_pair(cpp, "-isystem", "/usr/local/cuda/include"));
}

TEST(Flags, ExtraArgsComeBeforeTheFile) {
  const auto out = default_command("/x/k.cu", kPaths, {"-DEXTRA=1"});
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out[out.size() - 2], "-DEXTRA=1");
}

TEST(Flags, RecognisesNvcc) {
  EXPECT_TRUE(is_nvcc("/usr/local/cuda-13.0/bin/nvcc"));
  EXPECT_TRUE(is_nvcc("nvcc"));
  EXPECT_FALSE(is_nvcc("/usr/bin/clang++"));
}

}  // namespace
}  // namespace gpudiag::lint
