#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_raised_findings(const DetectContext&, std::vector<Finding>&);  // core/raised_findings.cpp

std::span<const Detector> detectors() {
  static const std::vector<Detector> all = [] {
    const auto rules = rule_detectors();
    std::vector<Detector> v(rules.begin(), rules.end());
    v.push_back({"", detect_raised_findings});
    return v;
  }();
  return all;
}

namespace {

template <class Wanted>
std::vector<Finding> run_detectors_if(const DetectContext& context, Wanted wanted) {
  std::vector<Finding> findings;
  for (const Detector& d : detectors()) {
    if (!wanted(d)) continue;
    DetectContext of_rule = context;
    // A rule detector's findings are of the rule it is named for; the pass
    // over raised findings has none of its own.
    of_rule.rule = d.rule.empty() ? nullptr : &rule_named(d.rule);
    d.run(of_rule, findings);
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.rule_id < b.rule_id; });
  return findings;
}

}  // namespace

std::vector<Finding> run_detectors(const DetectContext& context) {
  return run_detectors_if(context, [](const Detector&) { return true; });
}

std::vector<Finding> run_detectors(const DetectContext& context, std::span<const std::string_view> rules) {
  return run_detectors_if(context, [rules](const Detector& d) {
    return std::find(rules.begin(), rules.end(), d.rule) != rules.end();
  });
}

const Rule& rule_named(std::string_view name) {
  const Rule* rule = find_rule_named(name);
  if (rule == nullptr)
    throw std::logic_error(fmt::format("no rule named '{}' in the catalogue (rules/{}.md)", name, name));
  return *rule;
}

Finding make_finding(const Rule& rule, std::string message) {
  Finding f;
  f.rule_id = std::string(rule.id);
  f.severity = rule.severity;
  f.message = std::move(message);
  return f;
}

Finding make_finding(const DetectContext& ctx, std::string message) {
  if (ctx.rule == nullptr) throw std::logic_error("make_finding(ctx, ...) outside a rule's detector: it names no rule");
  return make_finding(*ctx.rule, std::move(message));
}

std::string_view module_file(const Trace& trace, const StackFrame& frame) {
  if (frame.module < 0 || static_cast<std::size_t>(frame.module) >= trace.modules.size()) return {};
  const std::string_view path = trace.str(trace.modules[static_cast<std::size_t>(frame.module)].path);
  return path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
}

namespace {

// The CUDA libraries and gpudiag's own: frames in them are how a call was
// recorded, not where the program made it.
bool in_tooling(const Trace& trace, const StackFrame& frame) {
  const std::string_view file = module_file(trace, frame);
  for (std::string_view library : {"libcuda.so", "libcudart.so", "libcupti.so", "libcudnn", "libcublas", "libgpudiag_"})
    if (file.starts_with(library)) return true;
  return false;
}

}  // namespace

std::vector<Frame> frames_of(const Trace& trace, StackId stack) {
  std::vector<Frame> out;
  if (stack == kNoStack) return out;
  const Stack& recorded = trace.stack(stack);
  const std::vector<StackFrame>& frames = recorded.frames;
  std::size_t first = 0;
  // A crash's stack is shown from where it faulted, even inside a library.
  while (!recorded.starts_at_fault && first < frames.size() && in_tooling(trace, frames[first])) ++first;
  if (first == frames.size()) first = 0;  // nothing of the program's own: show what there is
  for (const StackFrame& sf : std::span(frames).subspan(first)) {
    Frame f;
    f.address = sf.ip;
    f.function = std::string(trace.str(sf.function));
    f.file = std::string(trace.str(sf.file));
    f.line = sf.line;
    if (sf.module >= 0 && static_cast<std::size_t>(sf.module) < trace.modules.size()) {
      const Module& m = trace.modules[static_cast<std::size_t>(sf.module)];
      f.module = std::string(trace.str(m.path));
      // No symbol: where it is in its module, which a disassembler or addr2line can still place.
      if (f.function.empty() && sf.ip >= m.base)
        f.function = fmt::format("{}+0x{:x}", f.module.substr(f.module.rfind('/') + 1), sf.ip - m.base);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string frame_text(const Frame& frame) {
  const std::string function = frame.function.empty() ? fmt::format("0x{:x}", frame.address) : frame.function;
  return frame.file.empty() ? function : fmt::format("{} ({}:{})", function, frame.file, frame.line);
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < units.size()) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : (v < 100 ? 1 : 0), units[u]);
}

std::string format_duration(std::uint64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns < 1'000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.{}f} us", v / 1e3, v < 1e4 ? 2 : 1);
  if (ns < 1'000'000'000) return fmt::format("{:.{}f} ms", v / 1e6, v < 1e7 ? 2 : 1);
  return fmt::format("{:.2f} s", v / 1e9);
}

}  // namespace gpudiag
