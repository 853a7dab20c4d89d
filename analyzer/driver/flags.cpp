#include "flags.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>

#include <clang/Driver/Options.h>
#include <llvm/Option/ArgList.h>
#include <llvm/Option/OptTable.h>

namespace gpudiag::lint {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// nvcc options whose value is a separate argument and that clang cannot use.
constexpr std::array kDropWithValue = {
    "-o", "--output-file", "-ccbin", "--compiler-bindir", "-Xptxas", "--ptxas-options", "-Xnvlink",
    "--nvlink-options", "-Xlinker", "--linker-options", "-Xcudafe", "-Xarchive", "-Xfatbin", "-maxrregcount",
    "--maxrregcount", "-t", "--threads", "-cudart", "--cudart", "-MF", "-MT", "-MQ", "--dependency-output",
    "-rdc", "--relocatable-device-code", "-code", "--gpu-code", "-diag-suppress", "--diag-suppress",
    "--diag_suppress", "--diag-warn", "--diag-error", "-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt",
    "--prec-sqrt", "-fmad", "--fmad", "-odir", "--output-directory", "--keep-dir", "-split-compile",
    "--split-compile", "-optf", "--options-file", "-Werror", "--Werror", "-dlto", "-arch-ls", "--run-args",
    "-cudadevrt", "--cudadevrt", "-lib", "--library", "-L", "--library-path", "-l", "-ptxas-options",
    "-Xnvvm", "--nvvm-options"};

// nvcc switches (no value) that mean nothing to a syntax-only clang parse.
constexpr std::array kDropSwitch = {
    "-c", "--compile", "-G", "--device-debug", "-lineinfo", "--generate-line-info", "-g", "--debug",
    "--extended-lambda", "--expt-extended-lambda", "--expt-relaxed-constexpr", "-forward-unknown-to-host-compiler",
    "--forward-unknown-to-host-compiler", "-forward-unknown-to-host-linker", "--forward-unknown-to-host-linker",
    "-dc", "--device-c", "-dw", "--device-w", "-dlink", "--device-link", "-Wno-deprecated-gpu-targets",
    "-use_fast_math", "--use_fast_math", "-res-usage", "--resource-usage", "-src-in-ptx", "--source-in-ptx",
    "-restrict", "--restrict", "-MD", "-MMD", "-M", "-MM", "-MP", "--keep", "-keep", "-shared", "--shared",
    "-Wreorder", "-Wext-robust", "-Wdefault-stream-launch", "-Wmissing-launch-bounds",
    "-Wno-deprecated-declarations", "--display-error-number", "--no-display-error-number", "-lto", "--dlink-time-opt",
    "-static-global-template-stub=true", "-static-global-template-stub=false", "-E", "-cubin", "-ptx", "-fatbin"};

template <size_t N>
bool in(const std::array<const char*, N>& set, std::string_view value) {
  return std::any_of(set.begin(), set.end(), [&](const char* s) { return value == s; });
}

// Splits "--opt=value" into ("--opt", "value").
std::pair<std::string_view, std::string_view> split_eq(std::string_view arg) {
  size_t eq = arg.find('=');
  if (eq == std::string_view::npos) return {arg, {}};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void split_commas(std::string_view list, std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
}

// Removes what clang's driver does not know (gcc-only flags, leftovers).
std::vector<std::string> drop_unknown(const std::vector<std::string>& args) {
  std::vector<const char*> raw;
  for (const auto& a : args) raw.push_back(a.c_str());
  const llvm::opt::OptTable& table = clang::driver::getDriverOptTable();
  unsigned missing_index = 0, missing_count = 0;
  llvm::opt::InputArgList parsed = table.ParseArgs(raw, missing_index, missing_count,
                                                   llvm::opt::Visibility(clang::driver::options::ClangOption));
  std::vector<bool> keep(args.size(), true);
  for (const llvm::opt::Arg* arg : parsed) {
    if (arg->getOption().matches(clang::driver::options::OPT_UNKNOWN)) keep[arg->getIndex()] = false;
  }
  if (missing_count > 0 && missing_index < keep.size()) keep[missing_index] = false;
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i)
    if (keep[i]) out.push_back(args[i]);
  return out;
}

void add_cuda_support(std::vector<std::string>& out, const ToolPaths& paths, bool cuda_mode) {
  if (cuda_mode) {
    out.insert(out.end(), {"--cuda-host-only", "--no-cuda-version-check"});
    if (!paths.cuda_path.empty()) out.push_back("--cuda-path=" + paths.cuda_path);
    else out.push_back("-nocudainc");
  }
  if (!paths.cuda_path.empty()) {
    const std::string include = paths.cuda_path + "/include";
    if (std::filesystem::exists(include + "/cccl")) out.insert(out.end(), {"-isystem", include + "/cccl"});
    if (!cuda_mode) out.insert(out.end(), {"-isystem", include});
  }
  if (!paths.compat_dir.empty()) out.insert(out.end(), {"-idirafter", paths.compat_dir});
}

void add_common_tail(std::vector<std::string>& out, const ToolPaths& paths, const std::vector<std::string>& extra,
                     const std::string& file) {
  if (!paths.resource_dir.empty()) out.insert(out.end(), {"-resource-dir", paths.resource_dir});
  // Syntax only, no warnings: gpulint reports its own findings and parse errors.
  out.insert(out.end(), {"-fsyntax-only", "-w", "-Wno-unknown-warning-option", "-Qunused-arguments"});
  out.insert(out.end(), extra.begin(), extra.end());
  out.push_back(file);
}

}  // namespace

bool is_nvcc(std::string_view compiler) {
  std::string_view base = compiler.substr(compiler.find_last_of('/') + 1);
  return base == "nvcc" || base == "nvcc.exe" || base == "nvcc_wrapper";
}

bool is_cuda_source(std::string_view file) {
  return file.size() > 3 && (file.substr(file.size() - 3) == ".cu" || file.substr(file.size() - 4) == ".cuh");
}

std::string clang_gpu_arch(std::string_view spec) {
  // "sm_80", "compute_80", "arch=compute_80,code=[compute_80,sm_80]", "sm_90a".
  size_t pos = spec.find("sm_");
  if (pos == std::string_view::npos) pos = spec.find("compute_");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = spec.substr(spec[pos] == 's' ? pos + 3 : pos + 8);
  size_t len = 0;
  while (len < rest.size() && ((rest[len] >= '0' && rest[len] <= '9') || rest[len] == 'a')) ++len;
  std::string number(rest.substr(0, len));
  static constexpr std::array kKnown = {"50", "52", "53", "60", "61", "62", "70", "72", "75",
                                        "80", "86", "87", "89", "90", "90a"};
  if (!in(kKnown, number)) return {};
  return "sm_" + number;
}

std::vector<std::string> translate_command(const std::vector<std::string>& command, const std::string& file,
                                           const ToolPaths& paths, const std::vector<std::string>& extra_args) {
  const bool nvcc = !command.empty() && is_nvcc(command.front());
  std::vector<std::string> args;
  std::string gpu_arch;
  bool cuda_mode = is_cuda_source(file) && nvcc;
  const std::string file_name = std::filesystem::path(file).filename().string();
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    auto value_of = [&](std::string_view inline_value) -> std::string {
      if (!inline_value.empty()) return std::string(inline_value);
      return i + 1 < command.size() ? command[++i] : std::string();
    };
    const auto [name, inline_value] = split_eq(arg);
    if (arg == file || (!arg.empty() && arg[0] != '-' && std::filesystem::path(arg).filename() == file_name)) continue;
    if (arg == "-o" || (starts_with(arg, "-o") && !nvcc && arg.size() > 2)) {  // -ofile (gcc)
      if (arg == "-o") ++i;
      continue;
    }
    if (!nvcc) {
      if (arg == "-c" || arg == "-MD" || arg == "-MMD") continue;
      if (arg == "-MF" || arg == "-MT" || arg == "-MQ") { ++i; continue; }
      if (arg == "-x" && i + 1 < command.size()) cuda_mode = cuda_mode || command[i + 1] == "cuda";
      if (starts_with(arg, "-x") && arg.size() > 2) cuda_mode = cuda_mode || arg.substr(2) == "cuda";
      args.push_back(arg);
      continue;
    }
    // nvcc
    if (name == "-x" || name == "--x") {
      std::string language = value_of(inline_value);
      cuda_mode = language == "cu";
      args.insert(args.end(), {"-x", cuda_mode ? std::string("cuda") : language});
    } else if (name == "-arch" || name == "--gpu-architecture" || name == "-gencode" || name == "--generate-code") {
      std::string arch = clang_gpu_arch(value_of(inline_value));
      if (gpu_arch.empty()) gpu_arch = arch;
    } else if (name == "-Xcompiler" || name == "--compiler-options") {
      split_commas(value_of(inline_value), args);
    } else if (name == "-std" || name == "--std") {
      args.push_back("-std=" + value_of(inline_value));
    } else if (name == "--default-stream" || name == "-default-stream") {
      std::string mode = value_of(inline_value);
      // nvcc defines the macro too, and the CUDA headers switch to the
      // per-thread entry points (cudaMemcpyAsync_ptsz) on it.
      if (mode == "per-thread")
        args.insert(args.end(), {"-fgpu-default-stream=per-thread", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1"});
    } else if (name == "--include-path" || name == "-I" || name == "-isystem" || name == "--system-include" ||
               name == "-D" || name == "--define-macro" || name == "-U" || name == "--undefine-macro" ||
               name == "-include" || name == "--pre-include") {
      static const std::pair<std::string_view, const char*> kMap[] = {
          {"--include-path", "-I"}, {"-I", "-I"}, {"-isystem", "-isystem"}, {"--system-include", "-isystem"},
          {"-D", "-D"}, {"--define-macro", "-D"}, {"-U", "-U"}, {"--undefine-macro", "-U"},
          {"-include", "-include"}, {"--pre-include", "-include"}};
      for (const auto& [from, to] : kMap)
        if (name == from) args.insert(args.end(), {to, value_of(inline_value)});
    } else if (in(kDropWithValue, name)) {
      if (inline_value.empty() && arg.find('=') == std::string::npos) ++i;
    } else if (in(kDropSwitch, arg) || starts_with(arg, "-Werror=") || starts_with(arg, "--Werror=") ||
               starts_with(arg, "-O") || starts_with(arg, "--optimize") || starts_with(arg, "-Xptxas=") ||
               starts_with(arg, "--diag") || starts_with(arg, "-rdc=") || starts_with(arg, "-l") ||
               starts_with(arg, "-L")) {
      continue;
    } else {
      args.push_back(arg);  // -I/path, -DX=1, -std=c++17, host flags: clang's option table decides below
    }
  }
  std::vector<std::string> out{"clang++"};
  std::vector<std::string> kept = drop_unknown(args);
  out.insert(out.end(), kept.begin(), kept.end());
  if (cuda_mode && std::find(out.begin(), out.end(), "-x") == out.end()) out.insert(out.end(), {"-x", "cuda"});
  if (cuda_mode && !gpu_arch.empty()) out.push_back("--cuda-gpu-arch=" + gpu_arch);
  add_cuda_support(out, paths, cuda_mode);
  add_common_tail(out, paths, extra_args, file);
  return out;
}

std::vector<std::string> default_command(const std::string& file, const ToolPaths& paths,
                                         const std::vector<std::string>& extra_args) {
  const bool cuda_mode = is_cuda_source(file);
  std::vector<std::string> out{"clang++", "-std=c++17"};
  if (cuda_mode) out.insert(out.end(), {"-x", "cuda"});
  add_cuda_support(out, paths, cuda_mode);
  add_common_tail(out, paths, extra_args, file);
  return out;
}

ToolPaths default_tool_paths(const std::string& argv0) {
  ToolPaths paths;
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  paths.resource_dir = env("GPULINT_RESOURCE_DIR");
  if (paths.resource_dir.empty()) paths.resource_dir = GPULINT_CLANG_RESOURCE_DIR;
  paths.compat_dir = env("GPULINT_COMPAT_DIR");
  if (paths.compat_dir.empty()) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) exe = std::filesystem::absolute(argv0, ec);
    auto installed = exe.parent_path().parent_path() / "share" / "gpudiag" / "cuda-compat";
    paths.compat_dir = !ec && std::filesystem::exists(installed) ? installed.string() : GPULINT_COMPAT_SOURCE_DIR;
  }
  paths.cuda_path = env("CUDA_PATH");
  if (paths.cuda_path.empty() && std::filesystem::exists("/usr/local/cuda/include/cuda_runtime.h"))
    paths.cuda_path = "/usr/local/cuda";
  return paths;
}

}  // namespace gpudiag::lint
