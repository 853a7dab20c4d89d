// Helpers shared by the tracer tests: temporary files, running a child, and
// whether CUDA can run here.
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "scratch_dir.h"

namespace gpudiag::test {

// Why CUDA cannot run here, or "" when it can.
inline std::string why_no_gpu() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::string("no CUDA driver: ") + dlerror();
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  std::string why;
  int devices = 0;
  if (init == nullptr || count == nullptr) why = "libcuda.so.1 lacks cuInit";
  else if (int rc = init(0); rc != 0) why = "cuInit failed with CUresult " + std::to_string(rc);
  else if (count(&devices) != 0 || devices == 0) why = "no CUDA device";
  dlclose(lib);
  return why;
}

// Whether the host can read the byte at p now, found without faulting: a
// pipe's write copies from the buffer and fails with EFAULT where it cannot.
inline bool host_readable(const void* p) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const ssize_t n = write(fds[1], p, 1);
  close(fds[0]);
  close(fds[1]);
  return n == 1;
}

inline std::string temp_path(const std::string& name) {
  static std::atomic<int> counter{0};
  static const std::string dir = gpudiag::test::scratch_dir("tracer");
  return (std::filesystem::path(dir) / (std::to_string(counter++) + "-" + name)).string();
}

// The bytes of the files in `dir` whose names start with `prefix`: a trace
// file with the segment files beside it (`TRACE.1`, ...), or a run's traces.
inline std::uint64_t bytes_of_files_starting_with(const std::filesystem::path& dir, const std::string& prefix) {
  std::uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with(prefix)) total += std::filesystem::file_size(e.path());
  return total;
}

// A trace file and its segment files.
inline std::uint64_t trace_files_bytes(const std::string& trace) {
  const std::filesystem::path path(trace);
  return bytes_of_files_starting_with(path.parent_path(), path.filename().string());
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
