#include "config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/YAMLTraits.h>

namespace gpudiag::lint {
namespace {

// The on-disk shape; mapped with LLVM's YAML I/O.
struct RawConfig {
  std::string checks;
  std::map<std::string, std::string> severity;
  std::optional<std::string> header_filter;
  std::vector<std::string> extra_args;
  std::vector<std::string> error_check_functions;
  bool allow_parse_errors = false;
};

}  // namespace
}  // namespace gpudiag::lint

template <>
struct llvm::yaml::CustomMappingTraits<std::map<std::string, std::string>> {
  static void inputOne(IO& io, StringRef key, std::map<std::string, std::string>& map) {
    io.mapRequired(key.str().c_str(), map[key.str()]);
  }
  static void output(IO& io, std::map<std::string, std::string>& map) {
    for (auto& [key, value] : map) io.mapRequired(key.c_str(), value);
  }
};

template <>
struct llvm::yaml::MappingTraits<gpudiag::lint::RawConfig> {
  static void mapping(IO& io, gpudiag::lint::RawConfig& config) {
    io.mapOptional("Checks", config.checks);
    io.mapOptional("Severity", config.severity);
    io.mapOptional("HeaderFilterRegex", config.header_filter);
    io.mapOptional("ExtraArgs", config.extra_args);
    io.mapOptional("ErrorCheckFunctions", config.error_check_functions);
    io.mapOptional("AllowParseErrors", config.allow_parse_errors);
  }
};

namespace gpudiag::lint {

std::optional<LintConfig> parse_config(std::string_view yaml, std::string_view origin, std::string& error) {
  RawConfig raw;
  std::string diagnostics;
  {
    llvm::yaml::Input input(llvm::StringRef(yaml.data(), yaml.size()), nullptr,
                            [](const llvm::SMDiagnostic& diag, void* context) {
                              auto* text = static_cast<std::string*>(context);
                              if (text->empty())
                                *text = "line " + std::to_string(diag.getLineNo()) + ": " + diag.getMessage().str();
                            },
                            &diagnostics);
    input >> raw;
    if (input.error()) {
      error = std::string(origin) + ": invalid .gpulint.yaml: " +
              (diagnostics.empty() ? std::string("not a mapping") : diagnostics);
      return std::nullopt;
    }
  }
  LintConfig config;
  config.source = std::string(origin);
  config.checks = raw.checks;
  for (const auto& [rule, level] : raw.severity) {
    auto severity = parse_severity(level);
    if (!severity) {
      error = std::string(origin) + ": Severity." + rule + ": '" + level + "' is not note, warning or error";
      return std::nullopt;
    }
    config.severity[rule] = *severity;
  }
  config.header_filter = raw.header_filter;
  config.extra_args = raw.extra_args;
  config.error_check_functions = raw.error_check_functions;
  config.allow_parse_errors = raw.allow_parse_errors;
  return config;
}

std::optional<LintConfig> load_config(const std::string& path, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read config file '" + path + "'";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, error);
}

std::string find_config_for(const std::string& file) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(file, ec).parent_path();
  while (!dir.empty()) {
    auto candidate = dir / ".gpulint.yaml";
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return {};
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative '*' matching, case-insensitive (rule ids are upper case, names lower).
  auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && lower(pattern[p]) == lower(text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

// Calls `each(glob)` for every glob of a comma-separated list, trimmed, with
// its '-' still on; empty ones are skipped.
template <typename Each>
void for_each_glob(std::string_view globs, Each each) {
  size_t start = 0;
  while (start <= globs.size()) {
    size_t end = globs.find(',', start);
    if (end == std::string_view::npos) end = globs.size();
    std::string_view glob = globs.substr(start, end - start);
    while (!glob.empty() && (glob.front() == ' ' || glob.front() == '\n')) glob.remove_prefix(1);
    while (!glob.empty() && (glob.back() == ' ' || glob.back() == '\n')) glob.remove_suffix(1);
    if (!glob.empty()) each(glob);
    start = end + 1;
  }
}

}  // namespace

bool check_enabled(std::string_view globs, std::string_view rule_id, std::string_view rule_name) {
  bool enabled = true;
  for_each_glob(globs, [&](std::string_view glob) {
    const bool negative = glob.front() == '-';
    if (negative) glob.remove_prefix(1);
    if (glob_match(glob, rule_id) || glob_match(glob, rule_name)) enabled = !negative;
  });
  return enabled;
}

std::vector<std::string> unmatched_globs(std::string_view globs, const std::vector<std::string>& names) {
  std::vector<std::string> unmatched;
  for_each_glob(globs, [&](std::string_view glob) {
    const std::string_view pattern = glob.front() == '-' ? glob.substr(1) : glob;
    if (std::none_of(names.begin(), names.end(), [&](const std::string& name) { return glob_match(pattern, name); }))
      unmatched.emplace_back(glob);
  });
  return unmatched;
}

}  // namespace gpudiag::lint
