// Findings the traced process raised itself (gdrt's checks, e.g. a scalar
// access on a device tensor) become Findings with the catalogue's severity.
#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_raised_findings(const DetectContext& ctx, std::vector<Finding>& out) {
  for (const RaisedFinding& r : ctx.trace.findings) {
    const std::string rule(ctx.trace.str(r.rule_id));
    if (rule.empty()) continue;  // a damaged record: a finding of no rule says nothing
    Finding f = make_finding(rule, std::string(ctx.trace.str(r.message)));
    f.stack = frames_of(ctx.trace, r.stack);
    f.notes.push_back({"raised by the traced process itself (thread " + std::to_string(r.tid) + ")", {}, {}});
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
