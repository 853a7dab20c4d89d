#include "suppress.h"

#include "config.h"

namespace gpudiag::lint {
namespace {

std::string_view line_at(std::string_view buffer, unsigned line) {
  size_t start = 0;
  for (unsigned current = 1; current < line; ++current) {
    start = buffer.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  size_t end = buffer.find('\n', start);
  return buffer.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// Does `marker` (e.g. "NOLINTNEXTLINE") occur in `text` with a list that names
// the rule, or with no list at all (all rules)? The match must not be a prefix
// of a longer marker: "NOLINT" must not match "NOLINTNEXTLINE".
bool marker_covers(std::string_view text, std::string_view marker, std::string_view id, std::string_view name) {
  size_t pos = 0;
  while ((pos = text.find(marker, pos)) != std::string_view::npos) {
    size_t after = pos + marker.size();
    pos = after;
    if (after < text.size() && text[after] >= 'A' && text[after] <= 'Z') continue;  // longer marker
    if (after >= text.size() || text[after] != '(') return true;                      // bare: every rule
    size_t close = text.find(')', after);
    if (close == std::string_view::npos) continue;
    std::string_view list = text.substr(after + 1, close - after - 1);
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string_view::npos) end = list.size();
      std::string_view item = list.substr(start, end - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty() && (glob_match(item, id) || glob_match(item, name))) return true;
      start = end + 1;
    }
  }
  return false;
}

}  // namespace

bool is_suppressed(std::string_view buffer, unsigned line, std::string_view rule_id, std::string_view rule_name) {
  if (line == 0) return false;
  if (marker_covers(line_at(buffer, line), "NOLINT", rule_id, rule_name)) return true;
  if (line > 1 && marker_covers(line_at(buffer, line - 1), "NOLINTNEXTLINE", rule_id, rule_name)) return true;
  // NOLINTBEGIN/END regions: count the open regions that cover this rule.
  if (buffer.find("NOLINTBEGIN") == std::string_view::npos) return false;
  int open = 0;
  for (unsigned current = 1; current < line; ++current) {
    std::string_view text = line_at(buffer, current);
    if (marker_covers(text, "NOLINTBEGIN", rule_id, rule_name)) ++open;
    if (marker_covers(text, "NOLINTEND", rule_id, rule_name) && open > 0) --open;
  }
  return open > 0;
}

}  // namespace gpudiag::lint
