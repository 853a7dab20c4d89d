// The system headers a group of files includes at the top, read as text before
// anything is parsed: what the group's shared preamble (shared_preamble.h)
// precompiles once instead of once per file.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace gpudiag::lint {

// Where a compile command finds the user's own headers: a header found there
// (or next to its includer) is the user's, read and reported, never
// precompiled; an include found nowhere here is a system header.
struct IncludeSearch {
  std::vector<std::string> quote_dirs;  // -iquote
  std::vector<std::string> user_dirs;   // -I
};

// The -iquote and -I folders of clang argv `argv`, relative ones resolved
// against `directory` (the command's working directory).
IncludeSearch include_search(const std::vector<std::string>& argv, const std::string& directory);

// Gathers, over the files of one compile command added in order, the system
// includes (spelled as written: "<cuda_runtime.h>", "\"cublas_v2.h\"") at the
// top of each file and of the user headers it includes there: its leading
// block of #include lines, as clangd's preamble is. A system header that any
// of them includes elsewhere (after a #define, under an #if, in a header
// included there) is left out: precompiled, it would come before what the
// file puts ahead of it.
class PreambleHeaders {
 public:
  void add_file(const std::string& file, const IncludeSearch& search);
  // In the order first seen.
  std::vector<std::string> headers() const;

 private:
  void scan(const std::string& path, const IncludeSearch& search, bool late);

  std::vector<std::string> order_;
  std::set<std::string> seen_;
  std::set<std::string> late_;
  std::set<std::string> scanned_;       // user files read for their top includes
  std::set<std::string> scanned_late_;  // user files read with every include late
};

}  // namespace gpudiag::lint
