#include "copy_guard_calls.h"  // cupti.h brings the parameter structs (generated_cuda*_meta.h)

#include <sys/syscall.h>
#include <unistd.h>

#include <string_view>

#include "event_calls.h"

namespace gpudiag::cupti {
namespace {

std::uint64_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::uint32_t this_thread() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

// The driver's name of a stream identity, for asking about it.
CUstream driver_handle(const void* stream, std::uint64_t key) {
  if (key == kLegacyStream) return CU_STREAM_LEGACY;
  if ((key & kPerThreadStreamTag) != 0) return CU_STREAM_PER_THREAD;
  return static_cast<CUstream>(const_cast<void*>(stream));
}

// cudaMemcpyKind: cudaMemcpyDeviceToHost = 2, cudaMemcpyDefault = 4 (the
// direction is found from the pointers).
constexpr int kCudaMemcpyDeviceToHost = 2;
constexpr int kCudaMemcpyDefault = 4;

template <class P>
const P& params_as(const void* params) {
  return *static_cast<const P*>(params);
}

// Calls that end every guard, and take no parameters: CUPTI passes them no
// parameter struct (functionParams is null), so they are told by id alone.
// On entry: the context goes (what was guarded may be unmapped). On return:
// the whole device was synchronised.
bool ends_all_on_entry(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
         (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaThreadExit_v3020);
}

bool ends_all_on_return(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020;
  return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
         (cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize || cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2);
}

}  // namespace

GuardCalls::GuardCalls(CopyGuard& guard, const GuardProbes& probes, bool (*can_guard)() noexcept)
    : guard_(guard), probes_(probes), can_guard_(can_guard) {}

std::uint64_t GuardCalls::stream_key(const void* handle, bool per_thread_call) {
  const std::uint64_t h = address(handle);
  if (h == 0) return per_thread_call ? per_thread_stream(this_thread()) : kLegacyStream;
  if (h == address(CU_STREAM_LEGACY)) return kLegacyStream;
  if (h == address(CU_STREAM_PER_THREAD)) return per_thread_stream(this_thread());
  return h;
}

bool GuardCalls::blocking(const void* stream, std::uint64_t key) const {
  if (key == kLegacyStream || (key & kPerThreadStreamTag) != 0) return true;
  unsigned int flags = 0;
  // Unknown: taken as blocking, which releases it with more syncs (fewer findings, none false).
  if (probes_.stream_get_flags == nullptr || probes_.stream_get_flags(driver_handle(stream, key), &flags) != CUDA_SUCCESS)
    return true;
  return (flags & CU_STREAM_NON_BLOCKING) == 0;
}

bool GuardCalls::capturing(const void* stream, std::uint64_t key) const {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (probes_.stream_is_capturing == nullptr ||
      probes_.stream_is_capturing(driver_handle(stream, key), &status) != CUDA_SUCCESS)
    return true;  // cannot tell: a copy captured into a graph runs only when the graph does
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUmemorytype GuardCalls::memory_type(std::uint64_t ptr) const {
  if (probes_.pointer_get_attribute == nullptr || ptr == 0) return CUmemorytype{};
  unsigned int type = 0;
  if (probes_.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS)
    return CUmemorytype{};  // not known to the driver: pageable host memory
  // The driver writes a bool or an int: a zeroed wider word reads either.
  unsigned long long managed = 0;
  if (probes_.pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr) == CUDA_SUCCESS && managed != 0)
    return CU_MEMORYTYPE_UNIFIED;  // migrates between host and device: never guarded
  return static_cast<CUmemorytype>(type);
}

SyncScope GuardCalls::scope(const void* stream, bool per_thread_call) const {
  const std::uint64_t key = stream_key(stream, per_thread_call);
  return scope_of(key, blocking(stream, key));
}

void GuardCalls::async_copy(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyDirection direction,
                            const void* stream, bool per_thread_call, std::int32_t status, std::uint64_t correlation) {
  if (status != 0 || bytes == 0) return;
  const CUmemorytype dst_type = memory_type(dst);
  if (dst_type == CU_MEMORYTYPE_HOST) {
    if (memory_type(src) != CU_MEMORYTYPE_DEVICE) return;  // host to host, or managed: not a device-to-host DMA
    const std::uint64_t key = stream_key(stream, per_thread_call);
    if (capturing(stream, key) || !can_guard_()) return;
    guard_.guard(dst, bytes, key, blocking(stream, key), correlation);
  } else if (dst_type == CUmemorytype{} && (direction == CopyDirection::DeviceToHost || memory_type(src) == CU_MEMORYTYPE_DEVICE)) {
    // Into pageable memory the copy returns only once it is done, and so is
    // everything before it on its stream.
    guard_.release(scope(stream, per_thread_call));
  }
}

void GuardCalls::entered(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, ApiKind kind, const char* name,
                         const void* params) {
  if (ends_all_on_entry(domain, cbid)) {
    guard_.release_all();
    return;
  }
  if (params == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000: guard_.release_all(); return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
        guard_.release(scope(params_as<cudaLaunchHostFunc_v10000_params>(params).stream, false));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000:
        guard_.release(scope(params_as<cudaLaunchHostFunc_ptsz_v10000_params>(params).stream, true));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000:
        guard_.release(scope(params_as<cudaStreamAddCallback_v5000_params>(params).stream, false));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000:
        guard_.release(scope(params_as<cudaStreamAddCallback_ptsz_v7000_params>(params).stream, true));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
        guard_.release(scope(params_as<cudaGraphLaunch_v10000_params>(params).stream, false));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        guard_.release(scope(params_as<cudaGraphLaunch_ptsz_v10000_params>(params).stream, true));
        return;
      default: break;
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      // Host memory mapped through the virtual-memory API goes away with these.
      case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree:
      case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy:
      case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
      case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease:
      case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2: guard_.release_all(); return;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
        guard_.release(scope(params_as<cuLaunchHostFunc_params>(params).hStream, false));
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
        guard_.release(scope(params_as<cuLaunchHostFunc_ptsz_params>(params).hStream, true));
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
        guard_.release(scope(params_as<cuStreamAddCallback_params>(params).hStream, false));
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz:
        guard_.release(scope(params_as<cuStreamAddCallback_ptsz_params>(params).hStream, true));
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
        guard_.release(scope(params_as<cuGraphLaunch_params>(params).hStream, false));
        return;
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
        guard_.release(scope(params_as<cuGraphLaunch_ptsz_params>(params).hStream, true));
        return;
      default: break;
    }
  } else {
    return;
  }
  // A synchronous copy waits for its stream (the legacy default stream, or the
  // thread's own in a _ptds call) and what that stream is ordered after, and
  // may then read or write host memory itself: released before it starts.
  if (kind == ApiKind::Copy && name != nullptr) {
    const std::string_view n(name);
    if (n.find("Async") == std::string_view::npos)
      guard_.release(scope_of(n.find("_ptds") != std::string_view::npos ? per_thread_stream(this_thread()) : kLegacyStream,
                              true));
  }
}

void GuardCalls::returned(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, std::int32_t status,
                          std::uint64_t correlation) {
  // Whatever it returned: after a failed sync nothing will complete, and a
  // read is no longer this rule's business.
  if (ends_all_on_return(domain, cbid)) {
    guard_.release_all();
    return;
  }
  if (params == nullptr) return;
  const bool ok = status == 0;
  // Events recorded, queries that found theirs done, and streams found done.
  if (const EventUse use = event_use(domain, cbid, params); use.op != EventUse::Op::None) {
    if (!ok) return;
    if (use.op == EventUse::Op::Record)
      guard_.event_recorded(address(use.event), scope(use.stream, use.per_thread_stream));
    else
      guard_.event_completed(address(use.event));
    return;
  }
  if (const QueriedStream q = queried_stream(domain, cbid, params); q.queried) {
    if (ok) guard_.release(scope(q.stream, q.per_thread_stream));
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
        static_assert(sizeof(cudaMemcpyAsync_v3020_params) == sizeof(cudaMemcpyAsync_ptsz_v7000_params));
        const auto& p = params_as<cudaMemcpyAsync_v3020_params>(params);
        const int kind = static_cast<int>(p.kind);
        if (kind == kCudaMemcpyDeviceToHost || kind == kCudaMemcpyDefault)
          async_copy(address(p.dst), address(p.src), p.count,
                     kind == kCudaMemcpyDeviceToHost ? CopyDirection::DeviceToHost : CopyDirection::Any, p.stream,
                     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, status, correlation);
        return;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
        static_assert(sizeof(cudaMemcpy2DAsync_v3020_params) == sizeof(cudaMemcpy2DAsync_ptsz_v7000_params));
        const auto& p = params_as<cudaMemcpy2DAsync_v3020_params>(params);
        const int kind = static_cast<int>(p.kind);
        const bool per_thread = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000;
        if (kind != kCudaMemcpyDeviceToHost && kind != kCudaMemcpyDefault) return;
        // Only a contiguous destination: the gaps between pitched rows belong to someone else.
        const bool contiguous = p.height <= 1 || p.dpitch == p.width;
        async_copy(address(p.dst), address(p.src), contiguous ? std::uint64_t{p.width} * p.height : 0,
                   kind == kCudaMemcpyDeviceToHost ? CopyDirection::DeviceToHost : CopyDirection::Any, p.stream,
                   per_thread, status, correlation);
        return;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
        // Whatever it returned: after a failed sync nothing will complete, and a read is no longer this rule's business.
        guard_.release(scope(params_as<cudaStreamSynchronize_v3020_params>(params).stream,
                             cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: guard_.release_all(); return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        guard_.event_completed(address(params_as<cudaEventSynchronize_v3020_params>(params).event));
        return;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000: {
        const auto& p = params_as<cudaStreamWaitEvent_v3020_params>(params);
        if (!ok) return;
        const std::uint64_t key = stream_key(p.stream, cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000);
        guard_.stream_waits_event(key, blocking(p.stream, key), address(p.event));
        return;
      }
      default: return;
    }
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
      static_assert(sizeof(cuMemcpyDtoHAsync_v2_params) == sizeof(cuMemcpyDtoHAsync_v2_ptsz_params));
      const auto& p = params_as<cuMemcpyDtoHAsync_v2_params>(params);
      async_copy(address(p.dstHost), p.srcDevice, p.ByteCount, CopyDirection::DeviceToHost, p.hStream,
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, status, correlation);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      const auto& p = params_as<cuMemcpyAsync_params>(params);
      async_copy(p.dst, p.src, p.ByteCount, CopyDirection::Any, p.hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
                 status, correlation);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      guard_.release(scope(params_as<cuStreamSynchronize_params>(params).hStream,
                           cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz));
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: guard_.release_all(); return;
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      guard_.event_completed(address(params_as<cuEventSynchronize_params>(params).hEvent));
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      const auto& p = params_as<cuStreamWaitEvent_params>(params);
      if (!ok) return;
      const std::uint64_t key = stream_key(p.hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz);
      guard_.stream_waits_event(key, blocking(p.hStream, key), address(p.hEvent));
      return;
    }
    default: return;
  }
}

std::vector<CUpti_CallbackId> guard_driver_callbacks() {
  return {CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback,       CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy,              CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
          CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,   CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
          CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2,
          CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree};
}

}  // namespace gpudiag::cupti
