// What an event call did to an event, read from its parameter struct:
// recorded it on a stream (cudaEventRecord and the driver's, with flags or
// per-thread) or found it complete (cudaEventQuery, cuEventQuery). With the
// stream each event was last recorded on, a completed query says which
// stream the host waited for. Pure, so it is tested with parameter structs.
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

// A stream or event query (cudaStreamQuery, cudaEventQuery and the
// driver's), done or not: CUPTI reports each as a synchronisation record,
// though the host did not wait in it.
bool is_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

}  // namespace gpudiag::cupti
