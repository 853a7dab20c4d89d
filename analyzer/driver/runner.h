// Parses each work item with clang and runs the enabled checks on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "database.h"
#include "flags.h"
#include "gpudiag/finding.h"

namespace gpudiag::lint {

struct RunOptions {
  std::string cli_checks;                  // --checks, appended after the config's Checks
  std::optional<LintConfig> forced_config; // --config FILE: used for every file
  unsigned jobs = 1;
  bool progress = false;                   // a counter on stderr
  ToolPaths paths;
};

struct RunResult {
  std::vector<Finding> findings;  // in file order, de-duplicated
  std::vector<std::string> errors;  // tool errors (unreadable config, ...): exit code 2
};

RunResult run_checks(const std::vector<WorkItem>& items, const RunOptions& options);

// The findings for one item (the unit the harness and -j use).
std::vector<Finding> lint_one(const WorkItem& item, const LintConfig& config, const RunOptions& options);

}  // namespace gpudiag::lint
