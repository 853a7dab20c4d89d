// Compile commands -> the clang command gpulint parses with. nvcc's
// options (from CMake or bear databases) are translated to clang's CUDA
// options; what clang cannot use is dropped; the flags that let clang 19 read
// the CUDA 13 headers are added.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpudiag::lint {

struct ToolPaths {
  std::string resource_dir;  // clang's own headers (clang-19 -print-resource-dir)
  std::string compat_dir;    // stand-ins for headers CUDA 13 removed
  std::string cuda_path;     // CUDA toolkit root; empty when none
};

// The paths found at run time: env GPULINT_RESOURCE_DIR / GPULINT_COMPAT_DIR /
// CUDA_PATH override the built-in ones; compat is looked up next to the
// executable (installed layout) before the source tree.
ToolPaths default_tool_paths(const std::string& argv0);

bool is_nvcc(std::string_view compiler);
bool is_cuda_source(std::string_view file);

// `command` is argv as recorded in the database (argv[0] = compiler), `file`
// the source it compiles. Returns clang argv, file last, syntax-only.
std::vector<std::string> translate_command(const std::vector<std::string>& command, const std::string& file,
                                           const ToolPaths& paths, const std::vector<std::string>& extra_args = {});

// For files with no database entry: .cu as CUDA, the rest as C++17.
std::vector<std::string> default_command(const std::string& file, const ToolPaths& paths,
                                         const std::vector<std::string>& extra_args = {});

// Every --cuda-gpu-arch=sm_XX clang 19 knows, from nvcc's -arch/-gencode spelling;
// "" when the architecture is virtual-only, "native"/"all" or unknown to clang 19.
std::string clang_gpu_arch(std::string_view nvcc_arch_spec);

}  // namespace gpudiag::lint
