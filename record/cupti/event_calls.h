// What an event call did to an event, read from its parameter struct:
// recorded it on a stream (cudaEventRecord and the driver's, with flags or
// per-thread) or found it complete (cudaEventQuery, cuEventQuery). With the
// stream each event was last recorded on, a completed query says which
// stream's work the host knows is done; a stream query names its stream.
// Pure, so it is tested with parameter structs.
#pragma once

#include <cupti.h>

#include <cstdint>

namespace gpudiag::cupti {

struct EventUse {
  enum class Op : std::uint8_t { None, Record, Query };
  Op op = Op::None;
  const void* event = nullptr;
  const void* stream = nullptr;     // Record: the cudaStream_t / CUstream
  bool per_thread_stream = false;   // Record: a _ptsz call, whose stream 0 is the per-thread stream
};

EventUse event_use(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params);

// The stream a stream query asked about (cudaStreamQuery, cuStreamQuery and
// their per-thread forms). Reported done, the query ordered all the work
// queued on that stream before it, as a synchronisation of it would have.
struct QueriedStream {
  bool queried = false;
  const void* stream = nullptr;    // the cudaStream_t / CUstream
  bool per_thread_stream = false;  // a _ptsz call, whose stream 0 is the per-thread stream
};

QueriedStream queried_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params);

// A stream or event query (cudaStreamQuery, cudaEventQuery and the
// driver's), done or not: CUPTI reports each as a synchronisation record,
// though the host did not wait in it.
bool is_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

}  // namespace gpudiag::cupti
