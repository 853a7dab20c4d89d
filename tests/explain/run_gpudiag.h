// Runs the built gpudiag binary (GPUDIAG_EXE) and captures its output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace gpudiag::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together when merge_stderr
};

// `args` is appended to the binary path as shell words; `env` holds env(1)
// options and assignments (by default NO_COLOR, so output has no escapes).
inline CommandResult run_gpudiag(const std::string& args, bool merge_stderr = true,
                                 const std::string& env = "NO_COLOR=1") {
  std::string command = "env " + env + " '" + std::string(GPUDIAG_EXE) + "' " + args;
  command += merge_stderr ? " 2>&1" : " 2>/dev/null";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace gpudiag::testing
