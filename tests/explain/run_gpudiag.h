// Runs the built gpudiag binary (GPUDIAG_EXE) and captures its output.
#pragma once

#include <string>

#include "run_command.h"

namespace gpudiag::testing {

using test::CommandResult;

// `args` is appended to the binary path as shell words; `env` holds env(1)
// options and assignments (by default NO_COLOR, so output has no escapes).
inline CommandResult run_gpudiag(const std::string& args, bool merge_stderr = true,
                                 const std::string& env = "NO_COLOR=1") {
  const std::string command = "env " + env + " " + test::shell_quote(GPUDIAG_EXE) + " " + args;
  return test::run_command(merge_stderr ? command : command + " 2>/dev/null", merge_stderr);
}

}  // namespace gpudiag::testing
