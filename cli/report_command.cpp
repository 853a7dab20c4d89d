// gpudiag report FILE: findings, memory timeline and GPU time of a trace
// (.gdtrace, Kineto JSON, nsys SQLite) as a terminal summary, JSON, SARIF or
// a self-contained HTML page. Exit 0: nothing at or above --fail-on; 1: some
// finding is; 2: bad input or usage.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>
#include <unistd.h>

#include <fmt/format.h>

#include "commands.h"
#include "job_report_run.h"
#include "gpudiag/emit.h"
#include "gpudiag/export/chrome_trace.h"
#include "gpudiag/report/load_and_analyze.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace.h"
#include "gpudiag/trace_io.h"
#include "segment_ring.h"

namespace gpudiag::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  bool rank_summary = false;
  unsigned jobs = 0;
  std::string dask;                    // "" the local threads
  std::vector<std::string> rank_args;  // the options below that change a rank's analysis, as given
  bool json = false;
  bool sarif = false;
  std::string html;
  std::string chrome;
  std::string output;
  std::string fail_on = "error";
  bool no_color = false;
  double idle_gap_ms = 500;
  double short_kernel_us = 50;
  std::string memory;  // empty: half of this machine's
  DetectOptions detect;  // the thresholds below that need no unit conversion bind to it directly
};

// Stage timings on stderr when the trace is large enough to make a user wait.
class Progress {
 public:
  void enable() { on_ = true; }
  void stage(std::string_view what) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    std::cerr << fmt::format("gpudiag report: {} ({:.1f} s)\n", what,
                             std::chrono::duration<double>(now - start_).count());
  }

 private:
  bool on_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

LoadOptions load_options(const ReportOptions& o) {
  LoadOptions load;
  load.detect = o.detect;
  load.detect.idle_gap_ns = static_cast<std::uint64_t>(o.idle_gap_ms * 1e6);
  load.detect.short_kernel_ns = static_cast<std::uint64_t>(o.short_kernel_us * 1e3);
  if (!o.memory.empty()) load.memory_bytes = gdtrace::parse_size(o.memory).value_or(0);
  return load;
}

// Several traces, a folder or a glob: the job they are the ranks of.
bool is_job(const ReportOptions& o) {
  if (o.inputs.size() != 1 || !o.dask.empty()) return true;
  std::error_code ec;
  return std::filesystem::is_directory(o.inputs[0], ec) ||
         (!std::filesystem::exists(o.inputs[0], ec) && o.inputs[0].find_first_of("*?[") != std::string::npos);
}

int run_report(const ReportOptions& o) {
  std::optional<Severity> threshold;
  if (o.fail_on != "none") {
    threshold = parse_severity(o.fail_on);
    if (!threshold) {
      std::cerr << fmt::format("gpudiag report: --fail-on takes none, note, warning or error, not '{}'\n", o.fail_on);
      return 2;
    }
  }
  if (o.json && o.sarif) {
    std::cerr << "gpudiag report: choose one of --json and --sarif\n";
    return 2;
  }
  if (o.rank_summary) {
    if (o.inputs.size() != 1 || is_job(o)) {
      std::cerr << "gpudiag report: --rank-summary summarises one trace file\n";
      return 2;
    }
    return run_rank_summary(o.inputs[0], o.output, o.html, load_options(o));
  }
  if (is_job(o)) {
    if (!o.chrome.empty()) {
      std::cerr << "gpudiag report: --chrome exports one trace; give it one file\n";
      return 2;
    }
    JobReportOptions job{.inputs = o.inputs, .json = o.json, .sarif = o.sarif,
                         .color = !o.no_color && o.output.empty() && want_color(STDOUT_FILENO), .html = o.html,
                         .output = o.output, .fail_on = threshold, .workers = o.jobs, .load = load_options(o),
                         .dask = o.dask, .rank_args = o.rank_args};
    return run_job_report(job);
  }
  const std::string& input = o.inputs[0];
  Progress progress;
  std::error_code size_error;  // a directory or a pipe has no size: load_trace says what is wrong
  if (const auto size = std::filesystem::file_size(input, size_error); !size_error && size > 64u << 20) progress.enable();
  progress.stage("loading " + input);
  LoadOptions load = load_options(o);
  load.progress = [&progress](std::string_view stage) { progress.stage(stage); };
  AnalysedTrace analysed;
  try {
    analysed = load_and_analyze(input, load);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("gpudiag report: {}\n", e.what());
    return 2;
  }
  const Trace& trace = analysed.trace;
  const Report& report = analysed.report;
  progress.stage(fmt::format("{} findings; writing", report.findings.size()));

  std::ofstream file;
  if (!o.output.empty()) {
    file.open(o.output, std::ios::binary);
    if (!file) {
      std::cerr << fmt::format("gpudiag report: cannot write {}\n", o.output);
      return 2;
    }
  }
  std::ostream& out = o.output.empty() ? std::cout : file;
  if (o.json) {
    out << report_json(trace, report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else if (o.sarif) {
    SarifOptions sarif;
    sarif.tool_version = GPUDIAG_VERSION;
    emit_report_sarif(out, trace, report, sarif);  // with dropped events, truncation, unclean stop
  } else {
    const bool color = !o.no_color && o.output.empty() && want_color(STDOUT_FILENO);
    print_summary(out, trace, report, {.color = color});
  }
  if (!o.html.empty()) {
    std::ofstream html(o.html, std::ios::binary);
    if (!html) {
      std::cerr << fmt::format("gpudiag report: cannot write {}\n", o.html);
      return 2;
    }
    write_html(html, trace, report);
    progress.stage("wrote " + o.html);
    if (!o.json && !o.sarif) out << fmt::format("HTML report: {}\n", o.html);
  }
  if (!o.chrome.empty()) {
    std::ofstream chrome(o.chrome, std::ios::binary);
    if (!chrome) {
      std::cerr << fmt::format("gpudiag report: cannot write {}\n", o.chrome);
      return 2;
    }
    write_chrome_trace(trace, chrome);
    progress.stage("wrote " + o.chrome);
    if (!o.json && !o.sarif) out << fmt::format("Chrome trace (ui.perfetto.dev, chrome://tracing): {}\n", o.chrome);
  }
  if (threshold)
    for (const Finding& f : report.findings)
      if (f.severity >= *threshold) return 1;
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int& status) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Report on a trace (.gdtrace, PyTorch profiler/Kineto JSON, Nsight Systems SQLite): findings, "
                "memory timeline, GPU time breakdown");
  cmd->add_option("traces", o->inputs,
                  "Trace file; or several, a folder or a glob: the ranks of one job, reported together")
      ->required();
  cmd->add_flag("--rank-summary", o->rank_summary,
                "Write one trace's summary for a job report (JSON), as a worker elsewhere makes it; with --html, "
                "also its page");
  cmd->add_option("--jobs", o->jobs, "Traces of a job analysed at once (default: one per core; with --dask local, "
                                     "the local cluster's workers)");
  cmd->add_option("--dask", o->dask,
                  "Analyse a job's ranks as tasks on a Dask cluster, then merge them here: local (a cluster on this "
                  "machine), a scheduler file (dask scheduler --scheduler-file FILE) or tcp://HOST:PORT. Needs "
                  "/usr/bin/python3 (GPUDIAG_PYTHON names another) with dask.distributed (Debian: "
                  "python3-distributed). Each task runs gpudiag report --rank-summary on a worker, which must see "
                  "the traces, the --html folder and this gpudiag (else one on its PATH) at the same paths: a shared "
                  "file system");
  cmd->add_flag("--json", o->json, "Write the report as JSON");
  cmd->add_flag("--sarif", o->sarif, "Write the findings as SARIF 2.1.0");
  cmd->add_option("--html", o->html, "Also write a self-contained HTML page (findings, memory timeline, GPU time)");
  cmd->add_option("--chrome", o->chrome, "Also write a Chrome trace JSON (Perfetto, chrome://tracing)");
  cmd->add_option("-o,--output", o->output, "Write the summary, JSON or SARIF to this file instead of stdout");
  cmd->add_option("--fail-on", o->fail_on, "Exit 1 when a finding has at least this severity: none|note|warning|error")
      ->capture_default_str();
  cmd->add_flag("--no-color", o->no_color, "No ANSI colour (also NO_COLOR=1)");
  cmd->add_option("--memory", o->memory,
                  "The memory the report may take (e.g. 8G; default: half of this machine's). A .gdtrace whose events "
                  "need more is analysed in passes, one span of the run at a time")
      ->check([](const std::string& text) {
        const auto bytes = gdtrace::parse_size(text);
        return bytes && *bytes >= kReportBytesPerEvent ? std::string() : std::string("not a size (e.g. 512M, 8G)");
      });
  // The options from here on change what a rank's analysis finds: --dask
  // hands them to its workers as given. (--memory, above, is each task's;
  // the workers of a local cluster share it, as the local threads do.)
  const std::size_t first_rank_option = cmd->get_options().size();
  cmd->add_option("--idle-gap-ms", o->idle_gap_ms, "GD011: report GPU idle gaps longer than this")->capture_default_str();
  cmd->add_option("--short-kernel-us", o->short_kernel_us, "GD011: kernels shorter than this count as short")
      ->capture_default_str();
  cmd->add_option("--idle-share", o->detect.idle_share,
                  "GD011: a note when the GPU is idle (or copying more than computing) at least this share of the time")
      ->capture_default_str();
  DetectOptions& d = o->detect;
  cmd->add_option("--tiny-bytes", d.tiny_transfer_bytes, "GD005: copies of at most this many bytes are tiny")
      ->capture_default_str();
  cmd->add_option("--tiny-count", d.tiny_transfer_count, "GD005: report from this many tiny copies on")
      ->capture_default_str();
  cmd->add_option("--tiny-per-iteration", d.tiny_reads_per_iteration,
                  "GD005: tiny reads are element-by-element access when this many come to an iteration, or in a row "
                  "with no GPU work between them (one loss.item() a step is not)")
      ->capture_default_str();
  cmd->add_option("--sync-share", d.sync_share,
                  "GD010: a warning when syncs cost at least this share of the training loop's time (per "
                  "iteration, the smaller of the host's blocked time and the GPU's idle time)")
      ->capture_default_str();
  cmd->add_option("--syncs-per-iteration", d.syncs_per_iteration,
                  "GD010: a note when syncs cost less than --sync-share but every iteration has at least this many")
      ->capture_default_str();
  cmd->add_option("--float64-share", d.float64_share,
                  "GD002: a warning when Float64 kernels take at least this share of kernel time; a note below")
      ->capture_default_str();
  cmd->add_option("--pageable-share", d.pageable_share,
                  "GD009: a warning when pageable async copies hold the host at least this share of the time judged; "
                  "a note below")
      ->capture_default_str();
  cmd->callback([o, cmd, first_rank_option, &status] {
    const std::vector<const CLI::Option*> options = std::as_const(*cmd).get_options();
    o->rank_args.clear();
    for (std::size_t i = first_rank_option; i < options.size(); ++i)
      for (const std::string& value : options[i]->results())
        o->rank_args.insert(o->rank_args.end(), {options[i]->get_name(), value});
    status = run_report(*o);
  });
}

}  // namespace gpudiag::cli
