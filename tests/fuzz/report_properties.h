// What every report must hold, whatever its input: the fuzz targets check
// these on each input and abort when one fails, so that libFuzzer keeps it.
#pragma once

#include <string>
#include <string_view>

#include "gpudiag/report/report.h"

namespace gpudiag::fuzz {

// Empty when every finding stands on events of its kind present in the
// trace (a premature free on a free and a use after it, an out-of-memory on
// a failed allocation, ...); else which finding does not.
std::string finding_without_evidence(const Trace& trace, const Report& report);

// Empty when no prefix of the .gdtrace `bytes`, cut at `cuts` evenly spaced
// points, reports an error that the whole file does not; else which cut does.
std::string error_only_in_a_cut(std::string_view bytes, int cuts);

// Aborts with `what` on stderr when it is not empty.
void require(const std::string& what);

}  // namespace gpudiag::fuzz
