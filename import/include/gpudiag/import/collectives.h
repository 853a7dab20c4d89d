// A trace's collectives (Trace::collectives) from the events that tell of
// them. The Kineto importer reads PyTorch's own records of them; traces
// without such records (.gdtrace, nsys) have them found here.
#pragma once

#include <cstdint>

#include "gpudiag/trace.h"

namespace gpudiag {

// Fills trace.collectives from the NCCL kernels and the NVTX ranges NCCL
// puts around its calls (ncclAllReduce, ncclGroupStart, ncclGroupEnd ...):
// a kernel whose launch lies in such a range (or in the ncclGroupEnd that
// ends a group of calls) is that call's, one collective from the call to
// the kernel's end. A kernel with no range, or a range with no kernel, is
// one on its own. NVTX says no sizes, groups or sequence numbers: those stay
// unsaid. load_trace() calls it for .gdtrace and nsys traces.
void find_collectives(Trace& trace);

namespace import {

// The last step of every source: sorts trace.collectives by begin time, and
// marks those the trace ends inside as unfinished. A source sets
// `unfinished` on a collective whose end it lacks (a launch whose kernel
// never came, a call whose run is missing); such a one is given the
// trace's end, trace_end_ns, as the least it ran to. One that ends past
// trace_end_ns ran on after the trace stopped and is marked too.
void settle_collectives(Trace& trace, std::uint64_t trace_end_ns);

}  // namespace import
}  // namespace gpudiag
