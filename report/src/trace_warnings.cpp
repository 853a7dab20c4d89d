// What a trace may be missing, in the words every report form uses, and the
// SARIF log that carries them as tool execution notifications.
#include <ostream>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"
#include "gpudiag/report/report.h"

namespace gpudiag {

std::vector<SarifNotification> trace_warnings(const Trace& trace) {
  std::vector<SarifNotification> out;
  // First: how the run ended matters more than anything missing from its trace.
  for (const Crash& c : trace.crashes)
    out.push_back({"crashed", "The traced program crashed", describe_crash(trace, c)});
  if (trace.dropped_events > 0)
    out.push_back({"dropped-events", "Events were dropped while recording the trace",
                   fmt::format("{} events were dropped while recording: the findings may miss what they held",
                               trace.dropped_events)});
  // What the file shows of its end, and nothing it does not: a cut, damage,
  // or no End record (a killed process and a file cut between two chunks
  // look alike).
  if (trace.truncated && trace.corrupt_chunk)
    // Bytes may follow the corrupt chunk: the recording did not necessarily stop there.
    out.push_back({"corrupt-trace", "The trace file has a corrupt chunk; reading stopped there",
                   fmt::format("the trace file is damaged ({}): the events in and after the corrupt chunk are missing",
                               trace.truncation_note.empty() ? "a corrupt chunk" : trace.truncation_note)});
  else if (trace.truncated)
    out.push_back({"truncated-trace", "The trace file ends inside a chunk: it was cut short",
                   fmt::format("the trace is truncated ({}): the events after the cut are missing",
                               trace.truncation_note.empty() ? "the file ends inside a chunk" : trace.truncation_note)});
  // A file cut short has no End chunk because it was cut; a damaged one may
  // also have lost it (its last chunk is not a valid End chunk).
  if (!trace.stopped_cleanly && !(trace.truncated && !trace.corrupt_chunk))
    out.push_back({"unclean-stop", "The recording has no end",
                   "the recording has no end (no End chunk): its process was killed before gpudiag could close the "
                   "trace, or the file was cut between two chunks; the events after its last chunk are missing"});
  if (!trace.complete()) {
    const std::size_t left_out = trace.events_past_whole_part();
    const std::uint64_t begin = trace.begin_ns();
    const std::uint64_t whole = trace.complete_until_ns > begin ? trace.complete_until_ns - begin : 0;
    out.push_back({"incomplete-evidence", "The trace is whole only up to a point; findings are judged up to it",
                   fmt::format("every thread's events are present until {} after the start of the trace, and its "
                               "events stop at {}: the report judges the first {}{}, so that no finding stands on an "
                               "event the missing part could contradict",
                               format_duration(whole), format_duration(trace.end_ns() - begin),
                               format_duration(whole),
                               left_out ? fmt::format(" and leaves out the {} event{} after it", left_out,
                                                      left_out == 1 ? "" : "s")
                                        : std::string())});
  }
  if (trace.bounded()) {
    const std::uint64_t begin = trace.begin_ns();
    const std::uint64_t dropped = trace.detail_from_ns > begin ? trace.detail_from_ns - begin : 0;
    out.push_back({"bounded-trace", "The trace was bounded in size; it has every event only from a point on",
                   fmt::format("the trace was bounded in size (--max-size): it has every event from {} after its "
                               "start to its end at {}; of the {} before, it kept the allocations live across it "
                               "with their stacks, errors, out-of-memory and the first occurrence of each kind of "
                               "event at each call site. Patterns and orderings are judged where it has every "
                               "event; before that, only a host pointer given to a kernel, a failed call and an "
                               "out-of-memory",
                               format_duration(dropped), format_duration(trace.end_ns() - begin),
                               format_duration(dropped))});
  }
  if (!trace.modules_without_lines.empty()) {
    std::string names;
    for (StringId m : trace.modules_without_lines) {
      const std::string_view path = trace.str(m);
      names += fmt::format("{}{}", names.empty() ? "" : ", ", path.substr(path.rfind('/') + 1));
    }
    out.push_back({"symbols-without-lines", "Some stack frames have no file and line",
                   fmt::format("frames in {} show function names without file:line: the modules are too large to read "
                               "their debug information for a report",
                               names)});
  }
  if (!trace.allocator_history_note.empty())
    out.push_back({"allocator-history", "The allocator history beside the trace could not be read",
                   fmt::format("the allocator history beside the trace could not be read ({}): frees of PyTorch's "
                               "cached blocks are not judged",
                               trace.allocator_history_note)});
  return out;
}

std::vector<SarifNotification> report_warnings(const Trace& trace, const Report& report) {
  std::vector<SarifNotification> out = trace_warnings(trace);
  if (!report.out_of_memory_snapshot_note.empty())
    out.push_back({"out-of-memory-snapshot", "PyTorch's snapshot at the out-of-memory could not be read",
                   fmt::format("PyTorch's allocator snapshot at the out-of-memory, beside the trace, could not be "
                               "read ({}): the out-of-memory is explained from the CUDA calls alone",
                               report.out_of_memory_snapshot_note)});
  if (!report.passes) return out;
  const AnalysisPasses& p = *report.passes;
  const std::uint64_t begin = trace.begin_ns();
  std::string peaks;
  for (const AnalysisPasses::Peak& peak : p.earlier_peaks)
    peaks += fmt::format("; the highest peak of live memory on {} was {}, {} after the start, in an earlier pass",
                         trace.device_label(peak.device), format_bytes(peak.bytes),
                         format_duration(peak.time_ns > begin ? peak.time_ns - begin : 0));
  out.push_back({"analysed-in-passes", "The trace was too big for memory; it was analysed in passes",
                 fmt::format("the trace's {} events do not fit in memory, so the report judged them in {} passes, each "
                             "a span of the run with every event in it and, of the spans before it, the allocations "
                             "live across them, errors, out-of-memory and the first occurrence of each kind of event "
                             "at each call site. A pattern that crosses two passes is judged within each, and each "
                             "finding says its pass. The memory timeline, the loop's iterations and the GPU time "
                             "breakdown shown are the last pass's, which has every event from {} after the start of "
                             "the trace{}",
                             p.events, p.count, format_duration(p.last_pass_from_ns > begin ? p.last_pass_from_ns - begin : 0),
                             peaks)});
  return out;
}

nlohmann::json report_sarif(const Trace& trace, const Report& report, SarifOptions options) {
  for (SarifNotification& w : report_warnings(trace, report)) options.warnings.push_back(std::move(w));
  return to_sarif(report.findings, options);
}

void emit_report_sarif(std::ostream& out, const Trace& trace, const Report& report, SarifOptions options) {
  out << report_sarif(trace, report, std::move(options)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
      << '\n';
}

}  // namespace gpudiag
