// What a runtime or driver allocation call did, read from its parameter
// struct (CUPTI's generated_cuda*_meta.h layouts) when the call returns.
// Pure: no CUPTI or CUDA calls, so it is tested with parameter structs built
// in the test. Allocations are recorded from these callbacks, not from
// CUPTI_ACTIVITY_KIND_MEMORY2, whose records crash the driver under
// cuMemFreeAsync of cudaMalloc memory.
#pragma once

#include <cupti.h>

#include <cstdint>

#include "gpudiag/event_types.h"

namespace gpudiag::cupti {

struct MemoryEffect {
  enum class Op : std::uint8_t { None, Alloc, Free };
  Op op = Op::None;
  std::uint64_t addr = 0;   // 0 for a failed allocation
  std::uint64_t bytes = 0;  // requested (also of a failed allocation); 0 when a free does not say
  MemKind kind = MemKind::Unknown;
  // Stream-ordered calls: the cudaStream_t / CUstream, and whether the call
  // was the per-thread-default-stream (_ptsz) variant.
  const void* stream = nullptr;
  bool stream_ordered = false;
  bool per_thread_stream = false;
};

// `succeeded`: the call returned success, so its output pointers hold the
// new address (they are not read otherwise: a failed call may have been given
// a null one). Calls that neither allocate nor free give Op::None.
MemoryEffect memory_effect(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, bool succeeded);

}  // namespace gpudiag::cupti
