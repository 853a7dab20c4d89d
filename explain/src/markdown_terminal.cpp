// A small markdown-to-terminal renderer for the catalogue entries: enough
// for headings, fenced code, **bold** and `code`. Tables and lists pass
// through as written, which reads well in a terminal already.
#include <string>
#include <string_view>

#include "gpudiag/explain/render.h"

namespace gpudiag::explain {
namespace {

constexpr std::string_view kBold = "\x1b[1m";
constexpr std::string_view kCode = "\x1b[36m";
constexpr std::string_view kReset = "\x1b[0m";

// **bold** and `code` spans. Without colour the backticks stay (they still
// mark code) and the asterisks go.
std::string inline_spans(std::string_view line, bool color) {
  std::string out;
  bool in_code = false;
  bool in_bold = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '`') {
      in_code = !in_code;
      if (color) {
        out += in_code ? kCode : kReset;
        if (!in_code && in_bold) out += kBold;
      } else {
        out += '`';
      }
      continue;
    }
    if (!in_code && line.compare(i, 2, "**") == 0) {
      in_bold = !in_bold;
      if (color) out += in_bold ? kBold : kReset;
      ++i;
      continue;
    }
    out += line[i];
  }
  if (color && (in_code || in_bold)) out += kReset;
  return out;
}

}  // namespace

std::string markdown_for_terminal(std::string_view markdown, bool color) {
  std::string out;
  bool in_fence = false;
  while (!markdown.empty()) {
    const auto nl = markdown.find('\n');
    std::string_view line = markdown.substr(0, nl);
    markdown.remove_prefix(nl == std::string_view::npos ? markdown.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (line.starts_with("```")) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) {
      out += "    ";
      if (color) out += kCode;
      out += line;
      if (color) out += kReset;
      out += '\n';
      continue;
    }
    if (line.starts_with("#")) {
      std::size_t level = line.find_first_not_of('#');
      if (level == std::string_view::npos) level = line.size();
      std::string_view title = line.substr(level);
      while (!title.empty() && title.front() == ' ') title.remove_prefix(1);
      std::string text = inline_spans(title, false);
      if (color) {
        out += kBold;
        out += text;
        out += kReset;
        out += '\n';
      } else {
        // Without colour, underline so headings still stand out.
        out += text;
        out += '\n';
        std::size_t width = 0;  // code points, not bytes
        for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
        out += std::string(width, level == 1 ? '=' : '-');
        out += '\n';
      }
      continue;
    }
    out += inline_spans(line, color);
    out += '\n';
  }
  return out;
}

}  // namespace gpudiag::explain
