#include "preamble_scan.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

namespace gpudiag::lint {
namespace {
namespace fs = std::filesystem;

struct Include {
  std::string name;  // between the delimiters
  bool angled = false;
  std::string spelled() const { return angled ? "<" + name + ">" : "\"" + name + "\""; }
};

// A file's includes: those of its leading block, and every one after it.
struct FileIncludes {
  std::vector<Include> top;
  std::vector<Include> rest;
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

// The leading block ends at the first line that is not an #include, a
// #pragma once or a header's include guard, as clangd's preamble bounds do
// for includes (a #define ends it here: what follows may depend on it).
FileIncludes read_includes(std::istream& in) {
  static const std::regex include_line(R"(^#\s*include\s*([<"])([^>"]+)[>"].*)");
  static const std::regex pragma_once(R"(^#\s*pragma\s+once\b.*)");
  static const std::regex ifndef_line(R"(^#\s*ifndef\s+(\w+)\s*$)");
  static const std::regex define_line(R"(^#\s*define\s+(\w+)\s*$)");
  FileIncludes out;
  bool top = true, in_comment = false, any_directive = false;
  std::string guard;  // an #ifndef at the very top, until its #define follows
  std::string raw;
  std::smatch match;
  while (std::getline(in, raw)) {
    const std::string line = without_comments(raw, in_comment);
    if (line.empty()) continue;
    const bool is_include = std::regex_match(line, match, include_line);
    Include include;
    if (is_include) include = Include{match[2].str(), match[1].str() == "<"};
    if (top) {
      if (!guard.empty()) {
        const bool closes = std::regex_match(line, match, define_line) && match[1].str() == guard;
        guard.clear();
        if (closes) continue;
        top = false;  // a plain #ifndef: what follows is conditional
      } else if (is_include) {
        out.top.push_back(include);
        any_directive = true;
        continue;
      } else if (std::regex_match(line, pragma_once)) {
        continue;
      } else if (!any_directive && std::regex_match(line, match, ifndef_line)) {
        guard = match[1].str();
        any_directive = true;
        continue;
      } else {
        top = false;
      }
    }
    if (is_include) out.rest.push_back(include);
  }
  return out;
}

// The user's header `include` names, seen from a file in `includer_dir`; none
// when only the system folders have it.
std::optional<std::string> find_user_header(const Include& include, const std::string& includer_dir,
                                            const IncludeSearch& search) {
  std::error_code ec;
  if (fs::path(include.name).is_absolute())  // not found through a search folder: never precompiled
    return fs::is_regular_file(include.name, ec) ? std::optional(include.name) : std::nullopt;
  std::vector<const std::string*> dirs;
  if (!include.angled) {
    dirs.push_back(&includer_dir);
    for (const auto& dir : search.quote_dirs) dirs.push_back(&dir);
  }
  for (const auto& dir : search.user_dirs) dirs.push_back(&dir);
  for (const std::string* dir : dirs) {
    const fs::path candidate = (fs::path(*dir) / include.name).lexically_normal();
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace

IncludeSearch include_search(const std::vector<std::string>& argv, const std::string& directory) {
  IncludeSearch search;
  auto add = [&](std::vector<std::string>& to, const std::string& value) {
    if (value.empty()) return;
    fs::path path(value);
    to.push_back((path.is_absolute() ? path : fs::path(directory) / path).lexically_normal().string());
  };
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    const bool has_next = i + 1 < argv.size();
    if (arg == "-I" || arg == "--include-directory") {
      if (has_next) add(search.user_dirs, argv[++i]);
    } else if (arg == "-iquote") {
      if (has_next) add(search.quote_dirs, argv[++i]);
    } else if (arg.rfind("--include-directory=", 0) == 0) {
      add(search.user_dirs, arg.substr(20));
    } else if (arg.rfind("-iquote", 0) == 0) {
      add(search.quote_dirs, arg.substr(7));
    } else if (arg.rfind("-I", 0) == 0) {
      add(search.user_dirs, arg.substr(2));
    }
  }
  return search;
}

void PreambleHeaders::add_file(const std::string& file, const IncludeSearch& search) { scan(file, search, false); }

std::vector<std::string> PreambleHeaders::headers() const {
  std::vector<std::string> out;
  static const std::regex delimiters(R"(^[<"](.*)[>"]$)");
  std::smatch match;
  for (const auto& spelled : order_)
    if (std::regex_match(spelled, match, delimiters) && !late_.count(match[1].str())) out.push_back(spelled);
  return out;
}

void PreambleHeaders::scan(const std::string& path, const IncludeSearch& search, bool late) {
  if (!(late ? scanned_late_ : scanned_).insert(path).second) return;
  std::ifstream in(path);
  if (!in) return;
  const FileIncludes includes = read_includes(in);
  const std::string dir = fs::path(path).parent_path().string();
  auto take = [&](const Include& include, bool include_late) {
    if (auto header = find_user_header(include, dir, search)) {
      scan(*header, search, include_late);
      return;
    }
    if (include_late) late_.insert(include.name);
    else if (seen_.insert(include.name).second) order_.push_back(include.spelled());
  };
  for (const auto& include : includes.top) take(include, late);
  for (const auto& include : includes.rest) take(include, true);
}

}  // namespace gpudiag::lint
