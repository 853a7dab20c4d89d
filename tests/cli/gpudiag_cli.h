// Running the gpudiag command from a test, as the CLI tests of `gpudiag
// trace` do: in a folder of its own, with its stderr captured.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace gpudiag::test {

struct CliRun {
  int status;
  std::string err;
};

// Runs gpudiag with args (and extra environment entries) in `dir`, capturing
// stderr; started with descriptor `closed` closed when it is 0, 1 or 2.
inline CliRun gpudiag(const std::vector<std::string>& args, const std::string& dir, const std::vector<std::string>& env = {},
               int closed = -1) {
  const std::string err_file = dir + "/stderr.txt";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    FILE* f = freopen(err_file.c_str(), "w", stderr);
    (void)f;
    if (closed >= 0) close(closed);
    std::vector<char*> argv{const_cast<char*>(GPUDIAG_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(125);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(err_file)};
}

inline std::string fresh_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace gpudiag::test
