// The system headers a file includes at its top, read as text before
// anything is parsed: what a shared preamble (shared_preamble.h) may
// precompile for it.
#pragma once

#include <string>
#include <vector>

#include "header_search.h"

namespace gpudiag::lint {

// The system includes (spelled as written: "<cuda_runtime.h>",
// "\"cublas_v2.h\"") of `file`'s leading block of #include lines, as
// clangd's preamble bounds read it, and of the user headers it includes
// there, in the order they come. They come before any #define or code of the
// file, so precompiling them ahead of it changes nothing they see.
// A header found in the user's folders of `search` (-iquote, -I) or next to
// its includer is the user's, read and reported, never precompiled; an
// include found nowhere there is a system header.
std::vector<std::string> top_system_includes(const std::string& file, const HeaderSearchList& search);

}  // namespace gpudiag::lint
