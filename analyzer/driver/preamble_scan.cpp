#include "preamble_scan.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

namespace gpudiag::lint {
namespace {
namespace fs = std::filesystem;

struct Include {
  std::string name;  // between the delimiters
  bool angled = false;
  std::string spelled() const { return angled ? "<" + name + ">" : "\"" + name + "\""; }
};

// `line` without its comments; `in_comment` carries a /* */ across lines.
std::string without_comments(const std::string& line, bool& in_comment) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (in_comment) {
      if (line.compare(i, 2, "*/") == 0) {
        in_comment = false;
        ++i;
      }
      continue;
    }
    if (line.compare(i, 2, "//") == 0) break;
    if (line.compare(i, 2, "/*") == 0) {
      in_comment = true;
      ++i;
      continue;
    }
    out += line[i];
  }
  const size_t first = out.find_first_not_of(" \t\r");
  const size_t last = out.find_last_not_of(" \t\r");
  return first == std::string::npos ? std::string() : out.substr(first, last - first + 1);
}

// The lines of a file without their comments, blank ones skipped.
class Lines {
 public:
  explicit Lines(std::istream& in) : in_(in) {}
  bool next(std::string& line) {
    for (std::string raw; std::getline(in_, raw);) {
      line = without_comments(raw, in_comment_);
      if (!line.empty()) return true;
    }
    return false;
  }

 private:
  std::istream& in_;
  bool in_comment_ = false;
};

// The first line of a conditional: `#if`, `#ifdef`, `#ifndef`.
bool opens_conditional(const std::string& line) {
  static const std::regex opens(R"(^#\s*if(n?def)?\b.*)");
  return std::regex_match(line, opens);
}

// `line` is a conditional's first line (`#if`, `#ifdef`, `#ifndef`) or one
// inside it; reads on to its `#endif`: whether every line of each branch is
// an MSVC `#pragma warning`, which clang ignores outside MSVC mode, so that
// whichever branch is taken changes nothing after it (Windows-only warning
// settings at the top of a header).
bool only_msvc_warnings_to_endif(std::string line, Lines& lines) {
  static const std::regex branch(R"(^#\s*(else|elif)\b.*)");
  static const std::regex closes(R"(^#\s*endif\b.*)");
  static const std::regex msvc_warning(R"(^#\s*pragma\s+warning\s*\(.*)");
  if (opens_conditional(line) && !lines.next(line)) return false;
  for (;;) {
    if (std::regex_match(line, closes)) return true;
    if (!std::regex_match(line, branch) && !std::regex_match(line, msvc_warning)) return false;
    if (!lines.next(line)) return false;
  }
}

// The includes of the leading block, which ends at the first line that is
// not an #include, a #pragma once, a header's include guard or a
// conditional of MSVC warning pragmas, as clangd's preamble bounds do for
// includes (a #define ends it here: what follows may depend on it).
std::vector<Include> top_includes(std::istream& in) {
  static const std::regex include_line(R"(^#\s*include\s*([<"])([^>"]+)[>"].*)");
  static const std::regex pragma_once(R"(^#\s*pragma\s+once\b.*)");
  static const std::regex ifndef_line(R"(^#\s*ifndef\s+(\w+)\s*$)");
  static const std::regex define_line(R"(^#\s*define\s+(\w+)\s*$)");
  std::vector<Include> out;
  Lines lines(in);
  bool any_directive = false;
  std::string guard;  // an #ifndef at the very top, until its #define follows
  std::smatch match;
  for (std::string line; lines.next(line); any_directive = true) {
    if (!guard.empty()) {
      const bool defines_guard = std::regex_match(line, match, define_line) && match[1].str() == guard;
      guard.clear();
      // Else a plain #ifndef: a conditional, of which this is a line.
      if (!defines_guard && !only_msvc_warnings_to_endif(line, lines)) break;
    } else if (std::regex_match(line, match, include_line)) {
      out.push_back(Include{match[2].str(), match[1].str() == "<"});
    } else if (!any_directive && std::regex_match(line, match, ifndef_line)) {
      guard = match[1].str();
    } else if (opens_conditional(line)) {
      if (!only_msvc_warnings_to_endif(line, lines)) break;
    } else if (!std::regex_match(line, pragma_once)) {
      break;
    }
  }
  return out;
}

// The user's header `include` names, seen from a file in `includer_dir`; none
// when only the system folders have it.
std::optional<std::string> find_user_header(const Include& include, const std::string& includer_dir,
                                            const HeaderSearchList& search) {
  std::error_code ec;
  if (fs::path(include.name).is_absolute())  // not found through a search folder: never precompiled
    return fs::is_regular_file(include.name, ec) ? std::optional(include.name) : std::nullopt;
  std::vector<const std::string*> dirs;
  if (!include.angled) dirs.push_back(&includer_dir);
  for (std::size_t i = include.angled ? search.quoted_only : 0; i < search.user_end; ++i)
    dirs.push_back(&search.dirs[i]);
  for (const std::string* dir : dirs) {
    const fs::path candidate = (fs::path(*dir) / include.name).lexically_normal();
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

// Adds the top system includes of `path` (and of the user headers among
// them) to `out`; `read` keeps a header included twice from being read again.
void collect(const std::string& path, const HeaderSearchList& search, std::set<std::string>& read,
             std::set<std::string>& seen, std::vector<std::string>& out) {
  if (!read.insert(path).second) return;
  std::ifstream in(path);
  if (!in) return;
  const std::string dir = fs::path(path).parent_path().string();
  for (const Include& include : top_includes(in)) {
    if (auto header = find_user_header(include, dir, search)) collect(*header, search, read, seen, out);
    else if (seen.insert(include.name).second) out.push_back(include.spelled());
  }
}

}  // namespace

std::vector<std::string> top_system_includes(const std::string& file, const HeaderSearchList& search) {
  std::set<std::string> read, seen;
  std::vector<std::string> out;
  collect(file, search, read, seen, out);
  return out;
}

}  // namespace gpudiag::lint
