// Findings the traced process raised itself (gdrt's checks, e.g. a scalar
// access on a device tensor) become Findings with the catalogue's severity.
#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_raised_findings(const DetectContext& ctx, std::vector<Finding>& out) {
  for (const RaisedFinding& r : ctx.trace.findings) {
    const std::string rule(ctx.trace.str(r.rule_id));
    if (rule.empty()) continue;  // a damaged record: a finding of no rule says nothing
    std::string message(ctx.trace.str(r.message));
    // The process names the rule itself: one the catalogue does not know
    // keeps the id it was given, with the default severity.
    Finding f;
    if (const Rule* known = find_rule(rule)) {
      f = make_finding(*known, std::move(message));
    } else {
      f.rule_id = rule;
      f.message = std::move(message);
    }
    f.stack = frames_of(ctx.trace, r.stack);
    f.notes.push_back({"raised by the traced process itself (thread " + std::to_string(r.tid) + ")", {}, {}});
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
