// .gpulint.yaml: which checks run, their severities, which headers report,
// extra compiler arguments, extra error-checking wrappers (GD006) and whether
// a file that does not parse fails the run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpudiag/finding.h"

namespace gpudiag::lint {

struct LintConfig {
  std::string checks;                        // clang-tidy style globs: "*,-GD010,premature-*"
  std::map<std::string, Severity> severity;  // by rule id or name
  std::optional<std::string> header_filter;  // regex over header paths; unset: main files only
  std::vector<std::string> extra_args;       // appended to every compile command
  std::vector<std::string> error_check_functions;  // GD006: calls that check the last error
  bool allow_parse_errors = false;           // a parse failure is a note, not an error
  std::string source;                        // the file it came from, for messages
};

// Parses YAML text; on error returns nullopt and sets `error` to a message
// that names the line.
std::optional<LintConfig> parse_config(std::string_view yaml, std::string_view origin, std::string& error);

// Reads a config file; nullopt with `error` on a missing or malformed file.
std::optional<LintConfig> load_config(const std::string& path, std::string& error);

// Walks up from `file`'s folder to the first .gpulint.yaml; empty if none.
std::string find_config_for(const std::string& file);

// true when `rule_id`/`rule_name` is enabled by the comma-separated globs
// (later globs win; "-" negates; no globs means every check).
bool check_enabled(std::string_view globs, std::string_view rule_id, std::string_view rule_name);

bool glob_match(std::string_view pattern, std::string_view text);

// The globs of `globs` ('-' included) that match none of `names` (the checks'
// ids and names): a misspelt check would otherwise be silently ignored.
std::vector<std::string> unmatched_globs(std::string_view globs, const std::vector<std::string>& names);

}  // namespace gpudiag::lint
