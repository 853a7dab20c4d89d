// A Trace as Chrome trace JSON, for ui.perfetto.dev and chrome://tracing.
#pragma once

#include <iosfwd>

#include "gpudiag/trace.h"

namespace gpudiag {

// A process per device (and one for the host), a thread track per stream,
// a counter of live memory.
void write_chrome_trace(const Trace& trace, std::ostream& out);

}  // namespace gpudiag
