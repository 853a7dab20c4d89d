// A compile command's header search, as clang's driver sets it up from the
// command (-iquote, -I, -isystem, the built-in and CUDA folders,
// -idirafter, -include): read once per command, for the shared preamble's
// two questions before anything is parsed, which of a file's headers are
// the user's (preamble_scan.h) and what parsing the others costs
// (header_cost.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpudiag::lint {

struct HeaderSearchList {
  // Absolute, in clang's order: the "..."-only folders (-iquote), the
  // user's (-I), the system ones, then -idirafter.
  std::vector<std::string> dirs;
  std::size_t quoted_only = 0;  // how many of `dirs`, at the front, only "..." searches
  std::size_t user_end = 0;     // dirs[quoted_only, user_end) are the user's (-I)
  std::vector<std::string> preincluded;  // -include, as written
};

// Of clang argv `argv` (source last) run in `directory`; empty when clang
// cannot make a compilation of it.
HeaderSearchList header_search_list(const std::vector<std::string>& argv, const std::string& directory);

}  // namespace gpudiag::lint
