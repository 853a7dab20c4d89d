#include "gpudiag/doctor/injection.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace gpudiag::doctor {
namespace {

namespace fs = std::filesystem;

// Runs in the forked child: only what is safe after fork in a process that
// may have threads (dlopen, write, _exit).
[[noreturn]] void load_in_child(const std::string& path, int out) {
  std::string error;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    error = e ? e : "dlopen failed";
  } else if (dlsym(handle, "InitializeInjection") == nullptr) {
    error = path + " has no InitializeInjection symbol: it is not a CUDA injection library";
  }
  [[maybe_unused]] ssize_t w = write(out, error.data(), error.size());
  _exit(error.empty() ? 0 : 1);
}

}  // namespace

std::string find_injection_library() {
  if (const char* env = std::getenv("GPUDIAG_CUPTI_LIBRARY"); env && *env) return env;
  std::vector<fs::path> candidates;
  std::error_code ec;
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
    candidates.push_back(exe.parent_path() / ".." / GPUDIAG_INSTALL_LIBDIR / "libgpudiag_cupti.so");
    candidates.push_back(exe.parent_path() / "libgpudiag_cupti.so");
  }
#ifdef GPUDIAG_BUILD_CUPTI_LIBRARY
  candidates.push_back(GPUDIAG_BUILD_CUPTI_LIBRARY);
#endif
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
  return {};
}

LibraryInfo check_injection_library(const std::string& path) {
  LibraryInfo info;
  info.tried.push_back(path);
  if (path.empty()) {
    info.load_error = "libgpudiag_cupti.so was not found (set GPUDIAG_CUPTI_LIBRARY)";
    return info;
  }
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    info.load_error = "cannot check it: pipe failed";
    return info;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    load_in_child(path, pipe_fds[1]);
  }
  close(pipe_fds[1]);
  if (pid < 0) {
    close(pipe_fds[0]);
    info.load_error = "cannot check it: fork failed";
    return info;
  }
  std::string error;
  std::array<char, 512> chunk;
  for (ssize_t n; (n = read(pipe_fds[0], chunk.data(), chunk.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    error.append(chunk.data(), static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    info.loaded = true;
    info.library = path;
  } else if (!error.empty()) {
    info.load_error = error;
  } else {
    info.load_error = WIFSIGNALED(status) ? "loading it killed the process with signal " + std::to_string(WTERMSIG(status))
                                          : "loading it failed";
  }
  return info;
}

}  // namespace gpudiag::doctor
