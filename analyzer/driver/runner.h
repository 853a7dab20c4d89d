// Parses each work item with clang and runs the enabled checks on it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "database.h"
#include "flags.h"
#include "gpudiag/finding.h"

namespace gpudiag::lint {

struct RunOptions {
  std::string cli_checks;                  // --checks, appended after the config's Checks
  std::optional<LintConfig> forced_config; // --config FILE: used for every file
  bool allow_parse_errors = false;         // --allow-parse-errors: a file that does not parse is a note
  unsigned jobs = 1;
  bool progress = false;                   // a counter on stderr
  bool shared_preamble = true;             // --no-preamble: every file parses the headers it shares itself
  ToolPaths paths;
};

struct RunResult {
  std::vector<Finding> findings;  // in file order, de-duplicated
  std::vector<std::string> errors;  // tool errors (unreadable config, ...): exit code 2, nothing analysed
  bool unknown_checks = false;      // a config's Checks named no check: the caller lists them
};

// "WHERE: no check matches 'x', 'y'" when globs of `globs` match neither the
// id nor the name of any check; empty when each matches one.
std::string unknown_checks_error(std::string_view globs, std::string_view where);

// Findings that depend on calls in other items (a launch helper checked by
// its callers in another file) are settled once every item is analysed.
RunResult run_checks(const std::vector<WorkItem>& items, const RunOptions& options);

}  // namespace gpudiag::lint
