// Running a command under tracing, for `gpudiag trace`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpudiag::cli {

struct TraceRunOptions {
  // The root process's trace; a directory: DIR/trace.gdtrace, and each
  // process of a distributed job DIR/rank<N>.gdtrace (trace_names.h).
  std::string output = "trace.gdtrace";
  bool stacks = true;
  bool guard_copies = true;              // the copy guard of the CUPTI library (GPUDIAG_TRACE_GUARD)
  std::vector<std::string> command;      // CMD ARGS...
  bool command_after_dashes = false;     // given after `--`: CMD may start with '-'
  std::string cupti_library;             // "" = find it
  std::uint64_t max_size = 0;            // bytes of each process's trace files (0: no bound)
  bool live = true;                      // print problems on stderr while the command runs (live_watch.h)
};

// --max-size when not given: what a workstation's disk takes for each
// process of a run, without a thought.
inline constexpr const char* kDefaultMaxSize = "2G";

struct TraceRunResult {
  int exit_status = 0;              // CMD's status, 128+signal when killed
  std::vector<std::string> traces;  // files written: the root's first, then by rank
  std::string cupti_library;        // what CUDA_INJECTION64_PATH was set to ("" none)
  std::string injection_error;      // why the injection library found was not used
  // Why processes of the command recorded nothing: one line from each whose
  // recorder could not start ("cannot create trace file F: reason").
  std::vector<std::string> recorder_errors;
  // Whether those lines could be collected: when not, a process's recorder
  // may have failed with its reason on the command's stderr only.
  bool recorder_errors_collected = false;
  // What naming the traces found wrong (two traces that say one rank), one line each.
  std::vector<std::string> warnings;
};

// The pattern every traced process writes to: `output` with ".%p" before the
// extension (unless it already has %p).
std::string trace_pattern(const std::string& output);
// The files every traced process of a run writes: `prefix<pid>suffix` in `dir`.
struct TraceFiles {
  std::filesystem::path dir;
  std::string prefix, suffix;
  // From a trace_pattern().
  static TraceFiles of_pattern(const std::string& pattern);
  // The pid in the name of one of them (a file name, without its directory), or -1.
  std::int64_t pid_of(const std::string& filename) const;
};

// The output cannot be written (its directory is missing, not a directory,
// or refuses a new file): a usage error, detected before the command runs.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the command, forwarding SIGINT/SIGTERM/SIGHUP, and collects the traces.
// Throws OutputError for an unusable output path, std::runtime_error when the
// command cannot be started at all.
TraceRunResult run_traced(const TraceRunOptions& options);

}  // namespace gpudiag::cli
