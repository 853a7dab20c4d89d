#include "text_snippet.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "utf8.h"

namespace gpudiag::detail {
namespace {

constexpr unsigned kTabStop = 8;
constexpr std::string_view kEllipsis = "...";
constexpr std::string_view kCaretColor = "\033[0;1;32m";
constexpr std::string_view kFixColor = "\033[0;32m";
constexpr std::string_view kReset = "\033[0m";

// One source character as drawn on the terminal.
struct Cell {
  std::string text;
  unsigned column = 0;  // 0-based display column where it starts
  unsigned width = 0;
};

// The line as cells, and for every byte the cell that holds it. Tabs expand
// to the next tab stop; control characters and invalid bytes are drawn
// visibly (<U+0007>, <FF>) as clang does, so they cannot act on the terminal.
struct DrawnLine {
  std::vector<Cell> cells;
  std::vector<std::size_t> cell_of_byte;
  unsigned width = 0;

  // Display column of the 1-based byte column; past the end clamps to the end.
  unsigned column_of(unsigned byte_column) const {
    const std::size_t byte = byte_column - 1;
    if (byte >= cell_of_byte.size()) return width;
    return cells[cell_of_byte[byte]].column;
  }
};

DrawnLine draw(std::string_view line) {
  DrawnLine drawn;
  drawn.cell_of_byte.reserve(line.size());
  for (std::size_t pos = 0; pos < line.size();) {
    const Utf8Char c = decode_utf8(line, pos);
    Cell cell;
    cell.column = drawn.width;
    if (!c.valid) {
      cell.text = fmt::format("<{:02X}>", static_cast<unsigned char>(line[pos]));
      cell.width = static_cast<unsigned>(cell.text.size());
    } else if (c.code_point == '\t') {
      cell.width = kTabStop - drawn.width % kTabStop;
      cell.text.assign(cell.width, ' ');
    } else if (c.code_point < 0x20 || (c.code_point >= 0x7F && c.code_point < 0xA0)) {
      cell.text = fmt::format("<U+{:04X}>", static_cast<unsigned>(c.code_point));
      cell.width = static_cast<unsigned>(cell.text.size());
    } else {
      cell.text.assign(line.substr(pos, c.length));
      cell.width = display_width(c.code_point);
    }
    drawn.width += cell.width;
    for (std::size_t i = 0; i < c.length; ++i) drawn.cell_of_byte.push_back(drawn.cells.size());
    drawn.cells.push_back(std::move(cell));
    pos += c.length;
  }
  return drawn;
}

// The display columns [begin, end) shown for a line of `width` columns so
// that `focus` is visible.
struct Window {
  unsigned begin = 0;
  unsigned end = 0;
};

Window window_around(const DrawnLine& line, unsigned focus) {
  if (line.width <= kMaxSnippetWidth) return {0, line.width};
  unsigned begin = focus > kMaxSnippetWidth / 2 ? focus - kMaxSnippetWidth / 2 : 0;
  unsigned end = begin + kMaxSnippetWidth;
  if (end > line.width) {
    end = line.width;
    begin = end - kMaxSnippetWidth;
  }
  return {begin, end};
}

}  // namespace

bool fix_fits_snippet(const FixIt& fix, const SourceLocation& at) {
  if (fix.begin.file != at.file || fix.begin.line != at.line || fix.begin.column == 0) return false;
  if (fix.end.line != 0 && (fix.end.line != fix.begin.line || fix.end.column < fix.begin.column)) {
    return false;
  }
  if (!fix.end.file.empty() && fix.end.file != fix.begin.file) return false;
  return std::none_of(fix.replacement.begin(), fix.replacement.end(), [](char ch) {
    const auto byte = static_cast<unsigned char>(ch);
    return byte < 0x20 || byte == 0x7F;
  });
}

bool print_snippet(std::ostream& out, SourceCache& cache, const SourceLocation& at,
                   const FixIt* fix, bool color) {
  const auto text = cache.line(at.file, at.line);
  if (!text) return false;
  const DrawnLine line = draw(*text);

  const bool has_caret = at.column != 0;
  const unsigned caret = has_caret ? line.column_of(at.column) : 0;
  unsigned range_begin = caret;
  unsigned range_end = caret;
  if (fix != nullptr) {
    range_begin = line.column_of(fix->begin.column);
    range_end = fix->end.line != 0 ? line.column_of(fix->end.column) : range_begin;
  }
  const Window window = window_around(line, has_caret ? caret : range_begin);

  // Source line, restricted to the cells that lie wholly in the window.
  std::string shown;
  const bool cut_front = window.begin > 0;
  bool cut_back = false;
  unsigned first_column = window.begin;
  bool first = true;
  for (const Cell& cell : line.cells) {
    if (cell.column < window.begin) continue;
    if (cell.column + cell.width > window.end) {
      cut_back = true;
      break;
    }
    if (first) first_column = cell.column, first = false;
    shown += cell.text;
  }
  const std::string gutter_number = fmt::format(" {:>4} | ", at.line);
  const std::string gutter_blank = std::string(gutter_number.size() - 2, ' ') + "| ";
  const unsigned offset = cut_front ? static_cast<unsigned>(kEllipsis.size()) : 0;
  out << gutter_number << (cut_front ? kEllipsis : "") << shown << (cut_back ? kEllipsis : "")
      << '\n';

  // Maps a display column to its position on the drawn line (inside the window).
  auto place = [&](unsigned column) -> unsigned {
    if (column < first_column) return offset;
    return column - first_column + offset;
  };

  if (has_caret || (fix != nullptr && range_end > range_begin)) {
    std::string marks;
    if (fix != nullptr) {
      for (unsigned c = range_begin; c < range_end; ++c) {
        const unsigned p = place(c);
        if (marks.size() <= p) marks.resize(p + 1, ' ');
        marks[p] = '~';
      }
    }
    if (has_caret) {
      const unsigned p = place(caret);
      if (marks.size() <= p) marks.resize(p + 1, ' ');
      marks[p] = '^';
    }
    const std::size_t lead = marks.find_first_not_of(' ');
    out << gutter_blank << marks.substr(0, lead);
    if (color) out << kCaretColor;
    out << marks.substr(lead);
    if (color) out << kReset;
    out << '\n';
  }
  if (fix != nullptr) {
    out << gutter_blank << std::string(place(range_begin), ' ');
    if (color) out << kFixColor;
    out << valid_utf8(fix->replacement);
    if (color) out << kReset;
    out << '\n';
  }
  return true;
}

}  // namespace gpudiag::detail
