#include "memory_calls.h"  // cupti.h brings the parameter structs (generated_cuda*_meta.h)

#include <type_traits>

namespace gpudiag::cupti {
namespace {

using Op = MemoryEffect::Op;

std::uint64_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The address an allocation call wrote through its output parameter.
template <class Out>
std::uint64_t written(Out* out, bool succeeded) {
  if (!succeeded || out == nullptr) return 0;
  if constexpr (std::is_pointer_v<Out>)
    return address(*out);
  else
    return static_cast<std::uint64_t>(*out);  // CUdeviceptr
}

template <class P, class Out>
MemoryEffect alloc(const void* params, Out* P::*out, std::size_t P::*size, MemKind kind, bool succeeded) {
  const auto* p = static_cast<const P*>(params);
  return {.op = Op::Alloc, .addr = written(p->*out, succeeded), .bytes = p->*size, .kind = kind};
}

template <class P, class Out, class Stream>
MemoryEffect alloc_async(const void* params, Out* P::*out, std::size_t P::*size, Stream P::*stream, bool per_thread,
                         bool succeeded) {
  const auto* p = static_cast<const P*>(params);
  return {.op = Op::Alloc, .addr = written(p->*out, succeeded), .bytes = p->*size, .kind = MemKind::Device,
          .stream = p->*stream, .stream_ordered = true, .per_thread_stream = per_thread};
}

template <class P, class Ptr>
MemoryEffect release(const void* params, Ptr P::*ptr, MemKind kind) {
  const auto* p = static_cast<const P*>(params);
  return {.op = Op::Free, .addr = address(reinterpret_cast<const void*>(p->*ptr)), .kind = kind};
}

template <class P, class Ptr, class Stream>
MemoryEffect release_async(const void* params, Ptr P::*ptr, Stream P::*stream, bool per_thread) {
  MemoryEffect e = release(params, ptr, MemKind::Device);
  e.stream = static_cast<const P*>(params)->*stream;
  e.stream_ordered = true;
  e.per_thread_stream = per_thread;
  return e;
}

// Pitched allocations: the pitch the call chose, times the rows.
template <class P>
MemoryEffect alloc_pitch(const void* params, bool succeeded) {
  const auto* p = static_cast<const P*>(params);
  MemoryEffect e{.op = Op::Alloc, .kind = MemKind::Device};
  if constexpr (requires { p->devPtr; }) {
    e.addr = written(p->devPtr, succeeded);
    e.bytes = (succeeded && p->pitch ? *p->pitch : p->width) * p->height;
  } else {
    e.addr = written(p->dptr, succeeded);
    e.bytes = (succeeded && p->pPitch ? *p->pPitch : p->WidthInBytes) * p->Height;
  }
  return e;
}

MemoryEffect runtime_effect(CUpti_CallbackId cbid, const void* params, bool ok) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
      return alloc(params, &cudaMalloc_v3020_params::devPtr, &cudaMalloc_v3020_params::size, MemKind::Device, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: return alloc_pitch<cudaMallocPitch_v3020_params>(params, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
      return alloc(params, &cudaMallocManaged_v6000_params::devPtr, &cudaMallocManaged_v6000_params::size,
                   MemKind::Managed, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
      return alloc(params, &cudaMallocHost_v3020_params::ptr, &cudaMallocHost_v3020_params::size, MemKind::Pinned, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
      return alloc(params, &cudaHostAlloc_v3020_params::pHost, &cudaHostAlloc_v3020_params::size, MemKind::Pinned, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
      const auto* p = static_cast<const cudaHostRegister_v4000_params*>(params);
      return {.op = Op::Alloc, .addr = ok ? address(p->ptr) : 0, .bytes = p->size, .kind = MemKind::Pinned};
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
      return alloc_async(params, &cudaMallocAsync_v11020_params::devPtr, &cudaMallocAsync_v11020_params::size,
                         &cudaMallocAsync_v11020_params::hStream, false, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
      return alloc_async(params, &cudaMallocAsync_ptsz_v11020_params::devPtr, &cudaMallocAsync_ptsz_v11020_params::size,
                         &cudaMallocAsync_ptsz_v11020_params::hStream, true, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
      return alloc_async(params, &cudaMallocFromPoolAsync_v11020_params::ptr,
                         &cudaMallocFromPoolAsync_v11020_params::size, &cudaMallocFromPoolAsync_v11020_params::stream,
                         false, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      return alloc_async(params, &cudaMallocFromPoolAsync_ptsz_v11020_params::ptr,
                         &cudaMallocFromPoolAsync_ptsz_v11020_params::size,
                         &cudaMallocFromPoolAsync_ptsz_v11020_params::stream, true, ok);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: return release(params, &cudaFree_v3020_params::devPtr, MemKind::Unknown);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020: return release(params, &cudaFreeHost_v3020_params::ptr, MemKind::Pinned);
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
      return release(params, &cudaHostUnregister_v4000_params::ptr, MemKind::Pinned);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
      return release_async(params, &cudaFreeAsync_v11020_params::devPtr, &cudaFreeAsync_v11020_params::hStream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
      return release_async(params, &cudaFreeAsync_ptsz_v11020_params::devPtr, &cudaFreeAsync_ptsz_v11020_params::hStream,
                           true);
    default: return {};
  }
}

MemoryEffect driver_effect(CUpti_CallbackId cbid, const void* params, bool ok) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      return alloc(params, &cuMemAlloc_v2_params::dptr, &cuMemAlloc_v2_params::bytesize, MemKind::Device, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: return alloc_pitch<cuMemAllocPitch_v2_params>(params, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      return alloc(params, &cuMemAllocManaged_params::dptr, &cuMemAllocManaged_params::bytesize, MemKind::Managed, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
      return alloc(params, &cuMemAllocHost_v2_params::pp, &cuMemAllocHost_v2_params::bytesize, MemKind::Pinned, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      return alloc(params, &cuMemHostAlloc_params::pp, &cuMemHostAlloc_params::bytesize, MemKind::Pinned, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto* p = static_cast<const cuMemHostRegister_v2_params*>(params);
      return {.op = Op::Alloc, .addr = ok ? address(p->p) : 0, .bytes = p->bytesize, .kind = MemKind::Pinned};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister: {
      const auto* p = static_cast<const cuMemHostRegister_params*>(params);
      return {.op = Op::Alloc, .addr = ok ? address(p->p) : 0, .bytes = p->bytesize, .kind = MemKind::Pinned};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      return alloc_async(params, &cuMemAllocAsync_params::dptr, &cuMemAllocAsync_params::bytesize,
                         &cuMemAllocAsync_params::hStream, false, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return alloc_async(params, &cuMemAllocAsync_ptsz_params::dptr, &cuMemAllocAsync_ptsz_params::bytesize,
                         &cuMemAllocAsync_ptsz_params::hStream, true, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      return alloc_async(params, &cuMemAllocFromPoolAsync_params::dptr, &cuMemAllocFromPoolAsync_params::bytesize,
                         &cuMemAllocFromPoolAsync_params::hStream, false, ok);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return alloc_async(params, &cuMemAllocFromPoolAsync_ptsz_params::dptr,
                         &cuMemAllocFromPoolAsync_ptsz_params::bytesize, &cuMemAllocFromPoolAsync_ptsz_params::hStream,
                         true, ok);
    // Virtual memory: physical memory becomes addressable when mapped, and a
    // failed cuMemCreate is where such an allocator runs out of memory.
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      if (ok) return {};
      const auto* p = static_cast<const cuMemCreate_params*>(params);
      return {.op = Op::Alloc, .bytes = p->size, .kind = MemKind::Device};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto* p = static_cast<const cuMemMap_params*>(params);
      return {.op = Op::Alloc, .addr = ok ? static_cast<std::uint64_t>(p->ptr) : 0, .bytes = p->size, .kind = MemKind::Device};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto* p = static_cast<const cuMemUnmap_params*>(params);
      return {.op = Op::Free, .addr = static_cast<std::uint64_t>(p->ptr), .bytes = p->size, .kind = MemKind::Device};
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: return release(params, &cuMemFree_v2_params::dptr, MemKind::Unknown);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: return release(params, &cuMemFreeHost_params::p, MemKind::Pinned);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister: return release(params, &cuMemHostUnregister_params::p, MemKind::Pinned);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      return release_async(params, &cuMemFreeAsync_params::dptr, &cuMemFreeAsync_params::hStream, false);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return release_async(params, &cuMemFreeAsync_ptsz_params::dptr, &cuMemFreeAsync_ptsz_params::hStream, true);
    default: return {};
  }
}

}  // namespace

MemoryEffect memory_effect(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, bool succeeded) {
  if (params == nullptr) return {};
  MemoryEffect e = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? runtime_effect(cbid, params, succeeded)
                   : domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_effect(cbid, params, succeeded)
                                                          : MemoryEffect{};
  // Freeing null is a no-op, and a failed call changed nothing.
  if (e.op == Op::Free && (e.addr == 0 || !succeeded)) return {};
  return e;
}

}  // namespace gpudiag::cupti
