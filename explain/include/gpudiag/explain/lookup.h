// Resolves what the user typed after `gpudiag explain`: a rule id or name, an
// error name of any library (also short forms such as BAD_PARAM), a number,
// or an error message as printed by PyTorch / cudaGetErrorString.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpudiag/catalogue.h"
#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain {

struct ErrorMatch {
  const ErrorEntry* entry = nullptr;
  // The name the user reached it by when it is not entry->name: a driver API
  // CUresult name, a deprecated alias. Empty otherwise.
  std::string alias;
};

struct LookupResult {
  enum class Kind { Rule, Error, Ambiguous, Unknown };
  Kind kind = Kind::Unknown;
  const Rule* rule = nullptr;       // Kind::Rule
  ErrorMatch error;                 // Kind::Error
  std::vector<std::string> notes;   // Kind::Error: other meanings of the same number, how it matched
  std::vector<std::string> candidates;  // Ambiguous: every match; Unknown: the closest names
};

LookupResult lookup(std::string_view query);

// Up to `limit` known names (rule ids and names, error names of every
// library) closest to `query`: substring matches first, then by edit distance.
std::vector<std::string> closest_names(std::string_view query, std::size_t limit = 5);

// Levenshtein distance, case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace gpudiag::explain
