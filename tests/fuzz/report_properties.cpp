#include "report_properties.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::fuzz {
namespace {

template <class Column, class Pred>
bool any(const Column& c, Pred p) {
  return std::any_of(c.begin(), c.end(), p);
}

// A use of memory after `time`: work that touched device memory, an access
// or a fault on the host, or a kernel still running.
bool used_after(const Trace& t, std::uint64_t time) {
  const auto after = [&](const auto& e) { return start_of(e) >= time; };
  return any(t.kernel_args, after) || any(t.memcpys, after) || any(t.memsets, after) || any(t.host_accesses, after) ||
         any(t.crashes, [&](const Crash& c) { return c.time_ns >= time; }) ||
         any(t.kernels, [&](const Kernel& k) { return k.end_ns > time; });
}

// Whether the trace holds the events a finding of `rule` stands on.
bool has_evidence(const Trace& t, std::string_view rule) {
  // The traced process may raise a finding of any rule itself.
  if (any(t.findings, [&](const RaisedFinding& f) { return t.str(f.rule_id) == rule; })) return true;
  const auto failed = [](const ApiCall& a) { return a.status != 0; };
  if (rule == "GD001") return !t.kernel_args.empty() || !t.host_accesses.empty() || !t.crashes.empty();
  if (rule == "GD002") return any(t.kernels, [&](const Kernel& k) { return is_float64_kernel(t.str(k.name)); });
  if (rule == "GD003") return !t.memcpys.empty() && (!t.host_accesses.empty() || !t.crashes.empty());
  if (rule == "GD004")
    return any(t.frees, [&](const Free& f) { return used_after(t, f.time_ns); }) ||
           any(t.cached_blocks, [&](const CachedBlock& b) {
             return b.free_ns != CachedBlock::kNever && used_after(t, std::min(b.free_requested_ns, b.free_ns));
           });
  if (rule == "GD005") return !t.memcpys.empty() || !t.host_accesses.empty();
  if (rule == "GD006") return any(t.api_calls, failed);
  if (rule == "GD007") return !t.allocs.empty();
  if (rule == "GD008") return !t.ooms.empty() || any(t.api_calls, failed);
  if (rule == "GD009") return any(t.memcpys, [](const Memcpy& c) { return c.async; });
  if (rule == "GD010") return !t.syncs.empty();
  if (rule == "GD011") return !t.kernels.empty() || !t.memcpys.empty() || !t.memsets.empty();
  return false;  // GD012 is gpulint's alone; an unknown rule stands on nothing
}

}  // namespace

std::string finding_without_evidence(const Trace& trace, const Report& report) {
  for (const Finding& f : report.findings)
    if (!has_evidence(trace, f.rule_id))
      return fmt::format("{} {} stands on no event of its kind in the trace: {}", to_string(f.severity), f.rule_id,
                         f.message);
  return {};
}

std::string error_only_in_a_cut(std::string_view bytes, int cuts) {
  const auto errors = [](std::string_view b) {
    std::set<std::string> rules;
    try {
      const Trace t = read_gdtrace_bytes(b, "cut.gdtrace");
      for (const Finding& f : analyze(t).findings)
        if (f.severity == Severity::Error) rules.insert(f.rule_id);
    } catch (const TraceError&) {
    }
    return rules;
  };
  const std::set<std::string> whole = errors(bytes);
  for (int i = 1; i <= cuts; ++i) {
    const std::size_t at = bytes.size() * static_cast<std::size_t>(i) / static_cast<std::size_t>(cuts + 1);
    for (const std::string& rule : errors(bytes.substr(0, at)))
      if (!whole.count(rule))
        return fmt::format("the file cut at byte {} of {} reports an error {} that the whole file does not", at,
                           bytes.size(), rule);
  }
  return {};
}

void require(const std::string& what) {
  if (what.empty()) return;
  std::fprintf(stderr, "property violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace gpudiag::fuzz
