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

// A fuzz target's body for an importer: the trace `read()` returns must
// have a report whose every finding stands on its events; a TraceError is
// the input refused, as it may be. Returns 0, as a fuzz target does.
template <class Read>
int require_a_sound_report(Read read) {
  try {
    const Trace t = read();
    require(finding_without_evidence(t, analyze(t)));
  } catch (const TraceError&) {
  }
  return 0;
}

}  // namespace gpudiag::fuzz
