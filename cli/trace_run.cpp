#include "trace_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "gpudiag/descriptors.h"
#include "gpudiag/doctor/injection.h"
#include "gpudiag/trace_io.h"
#include "live_watch.h"
#include "trace_names.h"

namespace gpudiag::cli {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_child = 0;

// What gpudiag trace passes on to the command rather than acting on: stop
// requests, SLURM-style preemption notices (USR1/USR2), terminal resizes.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

// Signals meant for gpudiag go to the traced command. A terminal's Ctrl-C
// (si_code SI_KERNEL) already reaches the whole foreground group: not resent.
void forward(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && (info == nullptr || info->si_code != SI_KERNEL)) kill(g_child, sig);
}

// A child that recorded no event: one that forked and then exec'd a program
// that is not traced, like a data loader's worker or a shell. Its file holds
// a header only, and a report of it would be noise. An unreadable file is
// kept, for the report to say what is wrong with it.
bool recorded_nothing(const std::string& path) {
  try {
    return read_gdtrace(path).event_count() == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// The folder of the Python startup hook (sitecustomize.py) beside this
// binary, where both the build tree and an install put it; empty if absent.
std::string python_hook_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path dir = exe.parent_path() / ".." / "share" / "gpudiag" / "python";
  if (fs::is_regular_file(dir / "sitecustomize.py", ec)) return fs::weakly_canonical(dir, ec).string();
  return {};
}

// Why no file can be created in `dir` ("" when one can), found by creating
// one: permission bits say nothing for root, and a read-only file system or
// /proc refuse what the bits allow.
std::string why_unwritable(const fs::path& dir) {
  std::string probe = (dir / ".gpudiag-trace-XXXXXX").string();
  const int fd = move_above_stdio(mkostemp(probe.data(), O_CLOEXEC));
  if (fd < 0) return std::strerror(errno);
  unlink(probe.c_str());
  close(fd);
  return {};
}

// The file each traced process's recorder appends to when it cannot start
// (GPUDIAG_TRACE_ERRORS): in the temporary directory, as the output directory
// may be what failed. "" when it cannot be created.
std::string make_recorder_errors_file() {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return {};
  std::string path = fs::absolute(tmp / "gpudiag-trace-errors-XXXXXX", ec).string();
  if (ec) return {};
  const int fd = move_above_stdio(mkostemp(path.data(), O_CLOEXEC));
  if (fd < 0) return {};
  close(fd);
  return path;
}

// The lines the recorders appended, and the file removed.
std::vector<std::string> take_recorder_errors(const std::string& path) {
  std::vector<std::string> lines;
  {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
  }
  unlink(path.c_str());
  return lines;
}

// One write(2), so that the line stays whole among what the command writes
// to the same stderr.
void write_line_to_stderr(const std::string& line) {
  const std::string text = line + '\n';
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

std::string trace_pattern(const std::string& output) {
  if (output.find("%p") != std::string::npos) return output;
  const fs::path p(output);
  const std::string ext = p.has_extension() ? p.extension().string() : std::string(".gdtrace");
  return (p.parent_path() / (p.stem().string() + ".%p" + ext)).string();
}

TraceFiles TraceFiles::of_pattern(const std::string& pattern) {
  const fs::path p(pattern);
  const std::string name = p.filename().string();
  const std::size_t at = name.find("%p");
  return {p.parent_path().empty() ? fs::path(".") : p.parent_path(), name.substr(0, at), name.substr(at + 2)};
}

std::int64_t TraceFiles::pid_of(const std::string& f) const {
  if (f.size() <= prefix.size() + suffix.size() || !f.starts_with(prefix) || !f.ends_with(suffix)) return -1;
  const std::string middle = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
  if (middle.size() > 18 || middle.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(middle);
}

TraceRunResult run_traced(const TraceRunOptions& options) {
  if (options.command.empty()) throw std::runtime_error("no command to trace");
  TraceRunResult result;
  // The driver ignores an injection library it cannot load: check it the
  // same way first, so that a failure is said, with the loader's reason.
  const std::string library = options.cupti_library.empty() ? doctor::find_injection_library() : options.cupti_library;
  if (!library.empty()) {
    const doctor::LibraryInfo check = doctor::check_injection_library(library);
    if (check.loaded)
      result.cupti_library = library;
    else
      result.injection_error = "the CUDA driver cannot load the injection library: " + check.load_error;
  }
  std::error_code ec;
  // `-o runs/`: the root's trace is runs/trace.gdtrace, its children's beside
  // it, and after the run each of a distributed job's is named by its rank.
  const bool output_is_dir = fs::is_directory(options.output, ec);
  const std::string output = output_is_dir ? (fs::path(options.output) / "trace.gdtrace").string() : options.output;
  const std::string pattern = trace_pattern(output);
  // Found before the command runs, not after it ran for nothing.
  const fs::path out_dir = fs::path(pattern).parent_path().empty() ? fs::path(".") : fs::path(pattern).parent_path();
  if (!fs::exists(out_dir, ec)) throw OutputError("the output directory " + out_dir.string() + " does not exist");
  if (!fs::is_directory(out_dir, ec))
    throw OutputError("the output directory " + out_dir.string() + " is not a directory");
  if (const std::string why = why_unwritable(out_dir); !why.empty())
    throw OutputError("cannot write in the output directory " + out_dir.string() + ": " + why);
  // Absolute: a command that changes directory before it loads the recorder
  // (a shell's cd, a script's os.chdir) still writes where gpudiag looks.
  const std::string env_pattern = fs::absolute(pattern, ec).string();
  const std::string errors_file = make_recorder_errors_file();
  result.recorder_errors_collected = !errors_file.empty();

  const std::string python_hook = python_hook_dir();
  const auto started = fs::file_time_type::clock::now();
  // Blocked from before the fork until the forwarding handlers are in place:
  // a signal in between waits instead of killing gpudiag and orphaning CMD.
  sigset_t forwarded_set, old_mask;
  sigemptyset(&forwarded_set);
  for (int sig : kForwarded) sigaddset(&forwarded_set, sig);
  sigprocmask(SIG_BLOCK, &forwarded_set, &old_mask);
  int ready[2];  // closed by exec: tells the parent whether exec worked
  const auto fail = [&old_mask, &errors_file](const char* what) {
    const int error = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    if (!errors_file.empty()) unlink(errors_file.c_str());
    throw std::runtime_error(std::string(what) + ": " + std::strerror(error));
  };
  if (pipe2(ready, O_CLOEXEC) != 0) fail("pipe");
  const pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    close(ready[0]);
    setenv("GPUDIAG_TRACE", env_pattern.empty() ? pattern.c_str() : env_pattern.c_str(), 1);
    if (!errors_file.empty()) setenv("GPUDIAG_TRACE_ERRORS", errors_file.c_str(), 1);
    setenv("GPUDIAG_TRACE_STACKS", options.stacks ? "on" : "off", 1);
    setenv("GPUDIAG_TRACE_GUARD", options.guard_copies ? "on" : "off", 1);
    if (options.max_size != 0)
      setenv("GPUDIAG_TRACE_MAX_SIZE", std::to_string(options.max_size).c_str(), 1);
    else
      unsetenv("GPUDIAG_TRACE_MAX_SIZE");
    // A Python program records PyTorch's allocator history beside its trace.
    if (!python_hook.empty()) {
      const char* path = getenv("PYTHONPATH");
      setenv("PYTHONPATH", (path && *path ? python_hook + ":" + path : python_hook).c_str(), 1);
    }
    if (!result.cupti_library.empty()) {
      setenv("CUDA_INJECTION64_PATH", result.cupti_library.c_str(), 1);
      // The program's NVTX ranges (its steps, where it names them) reach
      // CUPTI through the same library; a tool of the user's own stays.
      if (const char* tool = getenv("NVTX_INJECTION64_PATH"); tool == nullptr || *tool == '\0')
        setenv("NVTX_INJECTION64_PATH", result.cupti_library.c_str(), 1);
    }
    std::vector<char*> argv;
    for (const auto& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] ssize_t w = write(ready[1], &err, sizeof err);
    _exit(127);
  }
  close(ready[1]);
  int exec_errno = 0;
  const bool exec_failed = read(ready[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close(ready[0]);
  // Started while the forwarded signals are blocked, so that its thread
  // keeps them blocked and they reach the thread that waits for the command.
  std::unique_ptr<LiveWatch> live;
  if (options.live && !exec_failed)
    live = std::make_unique<LiveWatch>(TraceFiles::of_pattern(env_pattern.empty() ? pattern : env_pattern), started,
                                       [](const std::string& line) { write_line_to_stderr(line); });

  g_child = pid;
  struct sigaction sa {}, old[std::size(kForwarded)];
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &sa, &old[i]);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigprocmask(SIG_BLOCK, &forwarded_set, nullptr);
  for (std::size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old[i], nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  g_child = 0;
  if (live) live->stop();  // before the root's file is renamed, with every byte of it read
  if (!errors_file.empty()) result.recorder_errors = take_recorder_errors(errors_file);
  if (exec_failed)
    throw std::runtime_error("cannot run '" + options.command[0] + "': " + std::strerror(exec_errno));
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  std::string root = pattern;
  root.replace(root.find("%p"), 2, std::to_string(pid));
  if (!fs::exists(root, ec)) root.clear();
  std::vector<std::string> children;
  const TraceFiles files = TraceFiles::of_pattern(pattern);
  for (const auto& e : fs::directory_iterator(files.dir, ec)) {
    const std::int64_t file_pid = files.pid_of(e.path().filename().string());
    if (file_pid < 0 || file_pid == pid) continue;
    // Only children of this run: files written since it started.
    if (fs::last_write_time(e.path(), ec) + std::chrono::seconds(1) < started) continue;
    if (recorded_nothing(e.path().string())) {
      fs::remove(e.path(), ec);
      continue;
    }
    children.push_back(e.path().string());
  }
  // In the order the processes started, as far as their pids say.
  std::sort(children.begin(), children.end(), [&files](const std::string& a, const std::string& b) {
    return files.pid_of(fs::path(a).filename().string()) < files.pid_of(fs::path(b).filename().string());
  });
  if (output_is_dir) {
    NamedTraces named = name_traces_by_rank(root, output, children, files.dir, started);
    result.traces = std::move(named.traces);
    result.warnings = std::move(named.warnings);
    return result;
  }
  // The root process's file takes the requested name (unless the name asks
  // for the pid with %p); children keep their pid.
  if (!root.empty() && output.find("%p") == std::string::npos && root != output && move_trace(root, output))
    root = output;
  if (!root.empty()) result.traces.push_back(root);
  result.traces.insert(result.traces.end(), children.begin(), children.end());
  return result;
}

}  // namespace gpudiag::cli
