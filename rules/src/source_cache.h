// Source lines for the emitters (snippets, SARIF fingerprints). Files are read
// only when a finding first points into them and kept for the rest of one
// emit call; a file that cannot be read simply yields no lines.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag::detail {

class SourceCache {
 public:
  // Files larger than this are not read (a snippet is a courtesy, not worth
  // slurping a multi-gigabyte generated file).
  static constexpr std::size_t kMaxFileBytes = 64u << 20;

  // At most this many files are kept; the one read longest ago goes first
  // (a lint of a large tree must not hold every source in memory).
  static constexpr std::size_t kMaxFiles = 64;

  // Line `line` (1-based) of `file` without its line terminator ("\n" or
  // "\r\n"), or nullopt when the file is unreadable, not a regular file,
  // too large, or shorter than that. The view is valid until the next call.
  std::optional<std::string_view> line(const std::string& file, unsigned line);

 private:
  struct Text {
    bool readable = false;
    std::string bytes;
    std::vector<std::size_t> line_starts;  // filled as far as lines are asked for
    bool indexed_to_end = false;
  };
  Text& load(const std::string& file);

  std::map<std::string, Text, std::less<>> files_;
  std::deque<std::string> load_order_;
};

}  // namespace gpudiag::detail
