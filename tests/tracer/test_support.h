// Helpers shared by the tracer tests: temporary files and running a child.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gpudiag::test {

inline std::string temp_path(const std::string& name) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() / ("gpudiag-tracer-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / (std::to_string(counter++) + "-" + name)).string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Runs argv (argv[0] a path) with extra environment entries; returns the wait status.
inline int run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace gpudiag::test
