// The source excerpt under a clang-style diagnostic: the line with a gutter,
// a caret under the column, `~` under a fix-it's range and the replacement
// below it, e.g.
//      12 |   cudaFree(buf);
//         |   ^~~~~~~~
//         |   cudaFreeAsync
#pragma once

#include <ostream>

#include "gpudiag/finding.h"
#include "source_cache.h"

namespace gpudiag::detail {

// Lines wider than this (in terminal columns) are shown as a window around
// the caret, with "..." marking what was cut.
inline constexpr unsigned kMaxSnippetWidth = 160;

// True when `fix` can be drawn inside the snippet of `at`: same file, one
// line, and a replacement without line breaks or control characters.
bool fix_fits_snippet(const FixIt& fix, const SourceLocation& at);

// Prints the excerpt of `at` (and `fix` when non-null; the caller checked
// fix_fits_snippet). Prints nothing and returns false when the line cannot be
// read.
bool print_snippet(std::ostream& out, SourceCache& cache, const SourceLocation& at,
                   const FixIt* fix, bool color);

}  // namespace gpudiag::detail
