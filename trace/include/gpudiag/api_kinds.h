// What a CUDA runtime or driver API call is, by its name: the recorder uses it
// to decide which calls to record, the detectors to read them. One list, so
// both sides agree.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace gpudiag {

// EventRecord: cudaEventRecord marks a point of a stream that a later event
// sync or query waits for (the copy guard reads it); it does not block.
enum class ApiKind : std::uint8_t { Other, Memory, Copy, Memset, Launch, Sync, EventRecord };

namespace detail {
constexpr bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (name.starts_with(p)) return true;
  return false;
}
}  // namespace detail

// Allocation and release calls of every family: malloc/free, stream-ordered
// and pool, pinned host allocation and registration, managed, and the
// virtual-memory API (cuMemCreate/cuMemMap, which expandable allocators use).
constexpr ApiKind api_kind(std::string_view name) {
  using detail::starts_with_any;
  if (starts_with_any(name, {"cudaMemcpy", "cuMemcpy"})) return ApiKind::Copy;
  if (starts_with_any(name, {"cudaMemset", "cuMemset"})) return ApiKind::Memset;
  if (starts_with_any(name, {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaHostRegister", "cudaHostUnregister",
                             "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemHostRegister", "cuMemHostUnregister",
                             "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap"}))
    return name.starts_with("cuMemMapArray") ? ApiKind::Other : ApiKind::Memory;
  // __cudaLaunchKernel: what CUDA 13's <<<...>>> calls.
  if (starts_with_any(name, {"cudaLaunch", "__cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch"}))
    return ApiKind::Launch;
  if (starts_with_any(name, {"cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize",
                             "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaStreamQuery", "cudaEventQuery",
                             "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
                             "cuStreamQuery", "cuEventQuery"}))
    return ApiKind::Sync;
  if (starts_with_any(name, {"cudaEventRecord", "cuEventRecord"})) return ApiKind::EventRecord;
  return ApiKind::Other;
}

// Stream and event queries: the host asks whether work is done, and does not wait.
constexpr bool is_query_call(std::string_view name) {
  return detail::starts_with_any(name, {"cudaStreamQuery", "cudaEventQuery", "cuStreamQuery", "cuEventQuery"});
}

// Calls that allocate (a failure of one is an out-of-memory, GD008).
constexpr bool is_allocation_call(std::string_view name) {
  return api_kind(name) == ApiKind::Memory &&
         detail::starts_with_any(name, {"cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc", "cuMemCreate"});
}

// cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2.
inline constexpr std::int32_t kCudaOutOfMemory = 2;
// cudaErrorNotReady / CUDA_ERROR_NOT_READY: a query's "still running", not an error.
inline constexpr std::int32_t kCudaNotReady = 600;

}  // namespace gpudiag
