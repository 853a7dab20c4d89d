// The system headers a file includes at its top, read as text before
// anything is parsed: what a shared preamble (shared_preamble.h) may
// precompile for it.
#pragma once

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

// The system includes (spelled as written: "<cuda_runtime.h>",
// "\"cublas_v2.h\"") of `file`'s leading block of #include lines, as
// clangd's preamble bounds read it, and of the user headers it includes
// there, in the order they come. They come before any #define or code of the
// file, so precompiling them ahead of it changes nothing they see.
std::vector<std::string> top_system_includes(const std::string& file, const IncludeSearch& search);

}  // namespace gpudiag::lint
