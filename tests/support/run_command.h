// Runs a shell command line from a test and captures what it prints.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gpudiag::test {

struct CommandResult {
  int status = -1;  // as a shell reports it: 128 + N for signal N; -1 if it could not start
  std::string out;  // standard output, and standard error when merged
};

// Runs `command` with /bin/sh, its standard error merged into `out` unless
// `merge_stderr` is false (then it goes where the test's goes).
inline CommandResult run_command(const std::string& command, bool merge_stderr = true) {
  CommandResult result;
  FILE* pipe = popen(merge_stderr ? ("( " + command + " ) 2>&1").c_str() : command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return result;
}

// `s` as one shell word.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace gpudiag::test
