// The copy guard (copy_guard.h) driven by the CUDA calls the injection
// library sees: which copies are guarded, which calls release what. Pure but
// for the driver entry points it is given, so that it is tested with
// parameter structs built in the tests, as CUPTI hands them to a callback.
//
// Guarded: a successful asynchronous copy from device memory into pinned
// host memory (cudaMemcpyAsync with kind DeviceToHost or Default,
// cudaMemcpy2DAsync into a contiguous destination, cuMemcpyDtoHAsync,
// cuMemcpyAsync) on a stream that is not capturing a graph. Both sides are
// asked of the driver (CU_POINTER_ATTRIBUTE_MEMORY_TYPE; managed memory is
// never guarded).
//
// Released when the call returns: stream syncs (whatever their status) and
// stream queries that report completion; device and context syncs and
// cudaFree/cuMemFree (which synchronise the device): everything; event syncs
// and completed event queries: what the event covers (cudaEventRecord marks
// it); a device-to-host async copy into pageable memory, which returns only
// once done: its stream.
// Released when the call is entered, before it can touch the memory:
// synchronous copies (the legacy or per-thread default stream, and what it
// orders); pinned memory freed or unregistered, a device reset or a context
// destroyed: everything; host functions, stream callbacks and graph launches
// enqueued on a stream, which may read the buffer in stream order: that stream.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <vector>

#include "copy_guard.h"
#include "gpudiag/api_kinds.h"

namespace gpudiag::cupti {

// Driver entry points, looked up once (dlsym) in the libcuda that loaded the
// injection library: never from a callback.
struct GuardProbes {
  CUresult (*pointer_get_attribute)(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) = nullptr;
  CUresult (*stream_get_flags)(CUstream stream, unsigned int* flags) = nullptr;
  CUresult (*stream_is_capturing)(CUstream stream, CUstreamCaptureStatus* status) = nullptr;
  bool complete() const { return pointer_get_attribute && stream_get_flags && stream_is_capturing; }
};

class GuardCalls {
 public:
  // `can_guard`: whether a fault would reach the guard now (asked before each
  // guard: a SIGSEGV handler the program installs later takes them away).
  GuardCalls(CopyGuard& guard, const GuardProbes& probes, bool (*can_guard)() noexcept = rec::fault_filter_reachable);

  // At the entry of every call the injection library sees (`kind` from api_kind).
  void entered(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, ApiKind kind, const char* name, const void* params);
  // At the return of every call that api_kind does not class as Other.
  void returned(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, std::int32_t status,
                std::uint64_t correlation);

  // The stream identity of a handle: 0 is the legacy default stream, or the
  // calling thread's per-thread one in a _ptsz/_ptds call; cudaStreamLegacy
  // and cudaStreamPerThread (1 and 2) are those streams too.
  static std::uint64_t stream_key(const void* handle, bool per_thread_call);

 private:
  enum class CopyDirection : std::uint8_t { DeviceToHost, Any };
  void async_copy(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyDirection direction,
                  const void* stream, bool per_thread_call, std::int32_t status, std::uint64_t correlation);
  SyncScope scope(const void* stream, bool per_thread_call) const;
  bool blocking(const void* stream, std::uint64_t key) const;
  bool capturing(const void* stream, std::uint64_t key) const;
  CUmemorytype memory_type(std::uint64_t ptr) const;  // 0 when the driver does not know it (pageable)

  CopyGuard& guard_;
  GuardProbes probes_;
  bool (*can_guard_)() noexcept;
};

// Driver callbacks the guard needs that no detector reads (so that the
// injection library enables them): stream callbacks and context teardown.
std::vector<CUpti_CallbackId> guard_driver_callbacks();

}  // namespace gpudiag::cupti
