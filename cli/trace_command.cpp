// gpudiag trace [-o FILE] [--stacks=on|off] [--guard-copies=on|off] [--live=on|off] [--] CMD ARGS...
// Runs CMD with tracing on, says each problem on stderr as the traces show it
// (--live), returns CMD's exit status, and summarises the traces written (one
// per traced process).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace.h"
#include "segment_ring.h"
#include "trace_run.h"

namespace gpudiag::cli {
namespace {

void summarize(const std::string& path, std::ostream& out) {
  Trace t;
  try {
    t = load_trace(path);
  } catch (const TraceError& e) {
    out << fmt::format("  {}: unreadable: {}\n", path, e.what());
    return;
  }
  // A distributed job's process says its place: its file is named by it.
  const std::string place = t.job.known() ? ", " + t.job.label() : std::string();
  out << fmt::format("  {} (pid {}{}): {} events\n", path, t.pid, place, t.event_count());
  const std::pair<const char*, std::size_t> kinds[] = {
      {"kernels", t.kernels.size()},     {"copies", t.memcpys.size()},       {"memsets", t.memsets.size()},
      {"allocations", t.allocs.size()},  {"frees", t.frees.size()},          {"syncs", t.syncs.size()},
      {"API calls", t.api_calls.size()}, {"host accesses", t.host_accesses.size()},
      {"out-of-memory", t.ooms.size()},  {"findings raised", t.findings.size()}};
  std::string line;
  for (const auto& [name, n] : kinds)
    if (n != 0) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", n, name);
  if (!line.empty()) out << "    " << line << '\n';
  // Dropped events, a file cut short or damaged, a killed recording: worded as in every report.
  for (const SarifNotification& w : trace_warnings(t)) out << "    " << w.message << '\n';
}

// Each reason only where the run established it: a recorder that could not
// start says so (GPUDIAG_TRACE_ERRORS), so when none did, none started.
std::string no_trace_reason(const TraceRunResult& result) {
  std::string text;
  for (const auto& error : result.recorder_errors) text += "  no trace was written: " + error + '\n';
  if (!text.empty()) return text;
  if (!result.recorder_errors_collected)
    return "  no trace was written: no process of the command started recording, or one that could not said why on "
           "its stderr\n";
  if (result.cupti_library.empty())
    return "  no trace was written: the command did not load libgdrt, and CUDA activity was not traced\n";
  return "  no trace was written: the command loaded neither libgdrt nor CUDA, so nothing recorded\n";
}

int run_trace(const TraceRunOptions& options) {
  constexpr const char* kUsage = "usage: gpudiag trace [-o FILE] [--stacks=on|off] [--guard-copies=on|off] [--live=on|off] [--] CMD ARGS...\n";
  if (options.command.empty()) {
    std::cerr << "gpudiag trace: no command given\n" << kUsage;
    return 2;
  }
  // Parsing stopped at the first word that is not ours: an option-like one
  // is a mistyped option of gpudiag trace, not a command (after --, it may be).
  if (!options.command_after_dashes && options.command.front().starts_with("-")) {
    std::cerr << "gpudiag trace: unknown option '" << options.command.front() << "'\n" << kUsage;
    return 2;
  }
  TraceRunResult result;
  try {
    result = run_traced(options);
  } catch (const OutputError& e) {
    std::cerr << "gpudiag trace: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gpudiag trace: " << e.what() << '\n';
    return 127;
  }
  std::ostream& out = std::cerr;  // keep the command's stdout clean
  out << fmt::format("gpudiag trace: '{}' exited with status {}\n", options.command[0], result.exit_status);
  if (!result.injection_error.empty())
    out << "  warning: CUDA activity was not traced: " << result.injection_error << '\n';
  else if (result.cupti_library.empty())
    out << "  note: libgpudiag_cupti.so was not found (set GPUDIAG_CUPTI_LIBRARY); CUDA activity was not traced\n";
  if (result.traces.empty()) {
    out << no_trace_reason(result);
  } else {
    for (const auto& error : result.recorder_errors)
      out << "  warning: a process of the command could not record: " << error << '\n';
    for (const auto& warning : result.warnings) out << "  warning: " << warning << '\n';
    for (const auto& path : result.traces) summarize(path, out);
    // The report's findings, memory and GPU time, and the HTML beside each trace.
    for (const auto& path : result.traces) summarize_after_trace(path, out);
    out << fmt::format("  report: gpudiag report {}\n", result.traces.front());
  }
  return result.exit_status;
}

}  // namespace

void add_trace_command(CLI::App& app, int& status, const std::optional<std::vector<std::string>>& after_dashes) {
  auto options = std::make_shared<TraceRunOptions>();
  auto stacks = std::make_shared<std::string>("on");
  auto guard = std::make_shared<std::string>("on");
  auto max_size = std::make_shared<std::string>(kDefaultMaxSize);
  auto live = std::make_shared<std::string>("on");
  CLI::App* sub = app.add_subcommand("trace", "Run a command with tracing on and write a .gdtrace per process");
  sub->add_option("-o,--output", options->output,
                  "Trace file of the command's process (children: FILE.<pid>); a directory: DIR/trace.gdtrace, "
                  "and the processes of a distributed job DIR/rank<N>.gdtrace by the rank their launcher gave them "
                  "(the launcher's own: DIR/launcher.gdtrace)")
      ->capture_default_str();
  sub->add_option("--stacks", *stacks, "Capture host stacks at allocations, copies and launches")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  sub->add_option("--guard-copies", *guard,
                  "Read-protect the destination of each asynchronous device-to-host copy into pinned memory until a "
                  "sync covers it, so that a host access before then is caught (GD003) with its stack")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  sub->add_option("--max-size", *max_size,
                  "Bound each process's trace on disk (e.g. 64M, 2G; off: no bound). Past the bound the oldest "
                  "event detail is dropped, keeping live allocations, errors and first occurrences (also "
                  "GPUDIAG_TRACE_MAX_SIZE)")
      ->check([](const std::string& text) {
        if (text == "off") return std::string();
        const auto bytes = gdtrace::parse_size(text);
        if (!bytes) return std::string("not a size (e.g. 64M, 2G) or off");
        return *bytes < gdtrace::SegmentRing::kMinBytes ? std::string("below the smallest bound, 1M") : std::string();
      })
      ->capture_default_str();
  sub->add_option("--live", *live,
                  "While the command runs, print each new problem on gpudiag's stderr as the traces show it (a guarded "
                  "early read, a kernel argument into freed memory, an out-of-memory, a crash, a CUDA error), once per "
                  "rule and place: `gpudiag: GD008 out-of-memory: ... at FUNCTION (FILE:LINE)`")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  // Everything from the command on belongs to it, flags included and in
  // order: parsing stops at the first word that is not one of ours (or at --).
  sub->prefix_command();
  sub->footer("  CMD ARGS...  the command to run and its arguments, passed through unchanged");
  sub->callback([&status, &after_dashes, sub, options, stacks, guard, max_size, live] {
    options->stacks = *stacks == "on";
    options->live = *live == "on";
    options->guard_copies = *guard == "on";
    options->max_size = *max_size == "off" ? 0 : gdtrace::parse_size(*max_size).value_or(0);
    options->command = sub->remaining();
    options->command_after_dashes = after_dashes && options->command.empty();
    // A `--` after the command's first word is one of its arguments.
    if (after_dashes) {
      if (!options->command.empty()) options->command.emplace_back("--");
      options->command.insert(options->command.end(), after_dashes->begin(), after_dashes->end());
    }
    status = run_trace(*options);
  });
}

}  // namespace gpudiag::cli
