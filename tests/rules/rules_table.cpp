#include "rules_table.h"

#include <algorithm>
#include <initializer_list>
#include <vector>

namespace gpudiag::rules_readme {
namespace {

// A '|' would end the cell early.
std::string escaped_cell(std::string_view text) {
  std::string cell;
  for (char c : text) {
    if (c == '|') cell += '\\';
    cell += c;
  }
  return cell;
}

void append_row(std::string& table, std::initializer_list<std::string_view> cells) {
  table += '|';
  for (std::string_view cell : cells) {
    if (!cell.empty()) table.append(" ").append(cell);
    table += " |";
  }
  table += '\n';
}

// The offset of the line that is exactly `line`, searching from `from`; npos if none.
std::size_t find_line(std::string_view text, std::string_view line, std::size_t from = 0) {
  for (std::size_t at = text.find(line, from); at != std::string_view::npos; at = text.find(line, at + 1)) {
    const bool starts_line = at == 0 || text[at - 1] == '\n';
    const std::size_t end = at + line.size();
    const bool ends_line = end == text.size() || text[end] == '\n';
    if (starts_line && ends_line) return at;
  }
  return std::string_view::npos;
}

struct Span {
  std::size_t begin = 0;  // just after the begin marker's line
  std::size_t end = 0;    // the start of the end marker's line
  std::string error;
};

Span table_span(std::string_view readme) {
  const std::size_t begin = find_line(readme, kTableBegin);
  if (begin == std::string_view::npos) return {0, 0, "no line \"" + std::string(kTableBegin) + "\""};
  if (find_line(readme, kTableBegin, begin + 1) != std::string_view::npos) {
    return {0, 0, "more than one line \"" + std::string(kTableBegin) + "\""};
  }
  const std::size_t after = std::min(begin + kTableBegin.size() + 1, readme.size());
  const std::size_t end = find_line(readme, kTableEnd, after);
  if (end == std::string_view::npos) {
    return {0, 0, "no line \"" + std::string(kTableEnd) + "\" after \"" + std::string(kTableBegin) + "\""};
  }
  return {after, end, {}};
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    lines.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return lines;
}

}  // namespace

std::string rules_table(std::span<const Rule> rules) {
  std::string table;
  append_row(table, {"id", "name", "severity", "static", "runtime", "what goes wrong"});
  table += "|---|---|---|---|---|---|\n";
  for (const Rule& rule : rules) {
    const std::string link = "[" + std::string(rule.name) + "](" + std::string(rule.name) + ".md)";
    append_row(table, {rule.id, link, to_string(rule.severity), rule.is_static ? "yes" : "",
                       rule.is_runtime ? "yes" : "", escaped_cell(rule.summary)});
  }
  return table;
}

Spliced with_table(std::string_view readme, std::string_view table) {
  const Span span = table_span(readme);
  if (!span.error.empty()) return {{}, span.error};
  // Blank lines keep the markers out of the table: a markdown table runs on
  // to the next blank line.
  std::string text(readme.substr(0, span.begin));
  text.append("\n").append(table).append("\n").append(readme.substr(span.end));
  return {text, {}};
}

std::string_view current_table(std::string_view readme) {
  const Span span = table_span(readme);
  if (!span.error.empty()) return {};
  return readme.substr(span.begin, span.end - span.begin);
}

std::string line_diff(std::string_view before, std::string_view after) {
  const std::vector<std::string_view> a = lines_of(before);
  const std::vector<std::string_view> b = lines_of(after);
  // common[i][j]: the length of the longest common subsequence of a[i..] and b[j..].
  std::vector<std::vector<std::size_t>> common(a.size() + 1, std::vector<std::size_t>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  std::string diff;
  const auto line = [&diff](std::string_view mark, std::string_view text) {
    diff.append(mark).append(text).append("\n");
  };
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      line("  ", a[i++]);
      ++j;
    } else if (j == b.size() || (i < a.size() && common[i + 1][j] >= common[i][j + 1])) {
      line("- ", a[i++]);
    } else {
      line("+ ", b[j++]);
    }
  }
  return diff;
}

}  // namespace gpudiag::rules_readme
