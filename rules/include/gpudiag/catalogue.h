// The rule catalogue, compiled from rules/<name>.md into every binary.
#pragma once

#include <span>
#include <string_view>

#include "gpudiag/finding.h"

namespace gpudiag {

struct Rule {
  std::string_view id;        // "GD004"
  std::string_view name;      // "premature-free"
  Severity severity;          // default severity
  std::string_view summary;   // one line: what goes wrong
  bool is_static;             // gpulint can see it in source
  bool is_runtime;            // a trace can show it
  std::string_view markdown;  // the entry after its front matter, from the "# name (id)" title
};

// Every rule, ordered by id.
std::span<const Rule> catalogue();

// By id ("GD004", case-insensitive) or name ("premature-free"); nullptr if none.
const Rule* find_rule(std::string_view id_or_name);
// By its exact name only ("premature-free"), as code names the rule it
// implements: an id or another spelling finds nothing.
const Rule* find_rule_named(std::string_view name);

// "GD004 premature-free", the tag that ends every diagnostic line.
std::string rule_tag(const Rule& rule);

}  // namespace gpudiag
