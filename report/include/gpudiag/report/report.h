// gpudiag report: a Trace turned into findings, a memory timeline and a GPU
// time breakdown, and the outputs made from them (terminal summary, JSON,
// SARIF through the shared emitters, a self-contained HTML page).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/analysis/memory_timeline.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/emit.h"
#include "gpudiag/finding.h"
#include "gpudiag/trace.h"

namespace gpudiag {

// A trace too big for memory is analysed in passes (report_in_passes.h):
// every event is judged, one span of the run at a time, and the report's
// trace is the last pass's.
struct AnalysisPasses {
  std::size_t count = 0;
  std::uint64_t events = 0, kernels = 0, copies = 0, allocations = 0;  // of the whole trace
  std::uint64_t last_pass_from_ns = 0;  // where the last pass, the report's trace, has every event
  struct Peak {
    std::int32_t device = 0;
    std::uint64_t bytes = 0, time_ns = 0;
  };
  // The highest peak of live memory on each device over every pass, where
  // it is higher than the last pass's own.
  std::vector<Peak> earlier_peaks;
};

struct Report {
  MemoryTimeline memory;
  std::vector<GpuTime> gpu_time;
  RunPhases phases;
  std::vector<Finding> findings;
  std::optional<AnalysisPasses> passes;
  // Why PyTorch's snapshot at an out-of-memory, beside the trace, could not
  // be read (load_and_analyze explains GD008 from it where it can).
  std::string out_of_memory_snapshot_note;
};

Report analyze(const Trace& trace, const DetectOptions& options = {});

// The findings grouped by rule in the order every report form lists them:
// errors first, then warnings, then notes, and by rule id within a severity.
std::vector<std::vector<const Finding*>> findings_by_rule(const Report& report);

// What the trace may be missing, worded once for every report form (terminal
// summary, HTML, JSON, SARIF notifications): events dropped while recording,
// a file that ends early or has a corrupt chunk, a recording that did not stop
// cleanly. Empty when the trace is complete. Each is a SarifNotification so
// SARIF can carry it as it is (ids: dropped-events, truncated-trace,
// corrupt-trace, unclean-stop).
std::vector<SarifNotification> trace_warnings(const Trace& trace);
// trace_warnings, and what the report's own making leaves out (a trace
// analysed in passes: id analysed-in-passes): what every report form shows.
std::vector<SarifNotification> report_warnings(const Trace& trace, const Report& report);
// [{"id": ..., "message": ...}] of report_warnings, for the JSON outputs.
nlohmann::json warnings_json(const Trace& trace, const Report& report);

// The terminal summary: trace facts, dropped events and truncation (always,
// when there are any), findings by rule with counts and top stacks, peak
// memory per device, the GPU time breakdown.
struct SummaryOptions {
  bool color = false;
  std::size_t findings_per_rule = 3;  // printed in full; the rest are counted
};
void print_summary(std::ostream& out, const Trace& trace, const Report& report, const SummaryOptions& options);

// {"trace": {..., "warnings": [{"id", "message"}]}, "findings": [...emit.h schema...],
//  "memory": [...], "gpu_time": [...]}
nlohmann::json report_json(const Trace& trace, const Report& report);

// The findings as SARIF 2.1.0 (emit.h), with trace_warnings(trace) added to
// options.warnings so the log says when its results may be incomplete.
nlohmann::json report_sarif(const Trace& trace, const Report& report, SarifOptions options);
void emit_report_sarif(std::ostream& out, const Trace& trace, const Report& report, SarifOptions options);
nlohmann::json gpu_time_json(const GpuTime& g);
// What a breakdown covers, the same words in every report form: "the
// training loop's 279.2 ms, not the 21.41 s of start-up before it or the
// 10.8 ms after it", or "22.5 s from first to last GPU activity".
std::string gpu_time_span(const GpuTime& g);

struct HtmlOptions {
  std::size_t max_series = 200;        // allocations drawn one by one per device; the rest are merged
  std::size_t max_points = 2000;       // points of the merged series and counters per device
  std::size_t max_kernels = 20000;     // kernels embedded for "kernel nearby" on hover
  // Level-of-detail tiles, for a view zoomed into part of the run: level k
  // splits a device's run into 2^k equal tiles, each with its own largest
  // allocations (bytes x lifetime inside the tile) and its own merged rest.
  // A tile is kept only where an eighth of what it shows is merged by the
  // coarser tile the page would draw instead. Levels are added coarse to
  // fine while they fit in tile_bytes, so the tiles add at most tile_bytes
  // to the page, the stacks of their allocations included, shared alike by
  // the devices that merge allocations. With the defaults a page is at most
  // 40 MiB larger than without tiles (a 2 GB PyTorch snapshot's is 30 MB).
  std::size_t tile_series = 200;       // allocations drawn one by one per tile
  std::size_t tile_points = 300;       // points of a tile's merged series
  std::size_t max_tile_levels = 20;    // the finest level: about a millionth of the run per tile
  std::size_t tile_bytes = 40u << 20;  // what the tiles of all devices add to the page at most
};
// The data the page embeds (exposed for tests): one entry per device with
// its "series" (individual allocations), the merged "other" series and,
// where finer tiles show more, its "detail" (html_tiles.h in report/src).
nlohmann::json html_data(const Trace& trace, const Report& report, const HtmlOptions& options = {});
// Serialises JSON for a <script type="application/json"> element: no `<`,
// `>`, `&`, U+2028 or U+2029 left raw, so no string can end the element.
std::string json_for_script(const nlohmann::json& data);
void write_html(std::ostream& out, const Trace& trace, const Report& report, const HtmlOptions& options = {});

// What `gpudiag trace` calls when the traced program has ended: loads the
// trace, prints the summary to `out` and writes <trace_path>.html beside it.
// Returns the HTML path, or "" (with the reason on `out`) when it could not.
std::string summarize_after_trace(const std::string& trace_path, std::ostream& out);

}  // namespace gpudiag
