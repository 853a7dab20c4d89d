// Severity names as they appear in diagnostics, JSON and rule front matter.
#include "gpudiag/finding.h"

#include <array>
#include <cctype>
#include <utility>

namespace gpudiag {
namespace {

constexpr std::array<std::pair<Severity, std::string_view>, 3> kSeverityNames{{
    {Severity::Note, "note"},
    {Severity::Warning, "warning"},
    {Severity::Error, "error"},
}};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto ca = static_cast<unsigned char>(a[i]);
    const auto cb = static_cast<unsigned char>(b[i]);
    if (std::tolower(ca) != std::tolower(cb)) return false;
  }
  return true;
}

}  // namespace

std::string_view to_string(Severity s) {
  for (const auto& [severity, name] : kSeverityNames) {
    if (severity == s) return name;
  }
  // Only reachable through a cast of an out-of-range value; say so rather than
  // pretend it is one of the real severities.
  return "unknown";
}

std::optional<Severity> parse_severity(std::string_view text) {
  for (const auto& [severity, name] : kSeverityNames) {
    if (equals_ignoring_case(text, name)) return severity;
  }
  return std::nullopt;
}

}  // namespace gpudiag
