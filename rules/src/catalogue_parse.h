// Parsing and validation of the catalogue entries (rules/<name>.md).
// Internal to gpudiag_rules; the tests use it to prove that a malformed entry
// is rejected with a precise reason.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalogue_sources.h"
#include "gpudiag/catalogue.h"

namespace gpudiag::detail {

// Parses one entry: the front matter
//   ---
//   id: GD004
//   name: premature-free
//   severity: error
//   applies: static, runtime
//   summary: Memory is freed while queued GPU work may still use it.
//   ---
// then a body whose first line is the title `# premature-free (GD004)`.
// The name must equal `stem` (the file name without .md). The returned Rule
// views into `markdown`, which must outlive it; Rule::markdown is the body
// (from the title on), without the front matter. On failure returns nullopt
// and, when `error` is non-null, stores why.
std::optional<Rule> parse_rule_entry(std::string_view stem, std::string_view markdown,
                                     std::string* error);

// Parses every source, skips the malformed ones and those whose id or name is
// already taken, and orders the rest by id. Each skipped entry adds one line
// to `problems` (when non-null), naming the file and the reason.
std::vector<Rule> build_catalogue(std::span<const CatalogueSource> sources,
                                  std::vector<std::string>* problems);

// The problems found while building the embedded catalogue; empty when every
// rules/<name>.md is well formed.
const std::vector<std::string>& embedded_catalogue_problems();

}  // namespace gpudiag::detail
