// rules/README.md's table of rules, generated from the catalogue so that it
// cannot drift from the entries: rules_test fails when the README's copy is
// stale, and `cmake --build build --target refresh_rules_readme` rewrites it.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "gpudiag/catalogue.h"

namespace gpudiag::rules_readme {

// The lines around the generated table in the README; the text between them
// is replaced whole.
inline constexpr std::string_view kTableBegin =
    "<!-- The table is generated from the entries: cmake --build build --target refresh_rules_readme -->";
inline constexpr std::string_view kTableEnd = "<!-- End of the generated table -->";

inline constexpr std::string_view kRefreshCommand = "cmake --build build --target refresh_rules_readme";

// One row per rule, in the catalogue's order, under a header row:
// id, name (a link to its entry), severity, static, runtime, summary.
std::string rules_table(std::span<const Rule> rules);

struct Spliced {
  std::string text;   // the README with `table` between the markers
  std::string error;  // why the table has no place in it; empty on success
};

// `readme` with the text between the marker lines replaced by `table`, with
// a blank line either side.
Spliced with_table(std::string_view readme, std::string_view table);

// The text between the marker lines; empty when they are missing.
std::string_view current_table(std::string_view readme);

// Every line of `before` and `after` in order, from their longest common
// subsequence: kept ones start with "  ", removed "- ", added "+ ".
std::string line_diff(std::string_view before, std::string_view after);

}  // namespace gpudiag::rules_readme
