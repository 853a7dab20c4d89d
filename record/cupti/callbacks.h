// The CUPTI callback side of the injection library: API calls seen as they
// return (allocations, frees, out-of-memory, failed calls, the calls the
// detectors read) and the devices' descriptions as contexts are created.
#pragma once

#include <cstdint>
#include <string>

#include "gpudiag/record.h"

namespace gpudiag::cupti {

// Subscribes to the runtime API (every call, so that any failure is seen,
// unless GPUDIAG_TRACE_API_CALLBACKS says otherwise: callback_set.h), to the
// driver calls gpudiag analyses, and to context creation. Returns "" or what
// failed.
std::string enable_callbacks();

// The host stack captured when the call with this correlation id returned,
// or 0: the GPU records of a copy, memset or launch carry the stack of the
// call that issued them.
rec::StackId stack_of_call(std::uint32_t correlation);
// Whether the call with this correlation id was a stream or event query
// (asked once per id: CUPTI reports a query as a synchronisation record).
bool is_query_call(std::uint32_t correlation);

// At exit: says on stderr how many copies the copy guard could not guard (its
// table was full, or mprotect refused), if any: nothing is lost silently.
void note_unguarded_copies();

}  // namespace gpudiag::cupti
