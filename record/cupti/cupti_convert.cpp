#include "cupti_convert.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace gpudiag::cupti {
namespace {

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

std::uint32_t dim(std::int32_t v) { return v < 0 ? 0 : static_cast<std::uint32_t>(v); }

rec::StackId stack(const Hooks& h, std::uint32_t correlation) { return h.stack_of && correlation ? h.stack_of(correlation) : 0; }
rec::StringId intern(const Hooks& h, std::string_view s) { return h.intern ? h.intern(s) : 0; }

}  // namespace

MemKind mem_kind(std::uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemKind::Array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemKind::Managed;
    default: return MemKind::Unknown;
  }
}

CopyKind copy_kind(std::uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::PtoP;
    default: return CopyKind::Unknown;
  }
}

SyncKind sync_kind(std::uint32_t t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncKind::Event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncKind::StreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncKind::Stream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncKind::Context;
    default: return SyncKind::Unknown;
  }
}

namespace {

// CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 name their shared fields alike.
template <class Record>
rec::MemcpyEvent copy_event(const Record* m, const Hooks& h) {
  rec::MemcpyEvent e;
  e.start_ns = m->start;
  e.end_ns = m->end;
  e.bytes = m->bytes;
  e.copy = copy_kind(m->copyKind);
  e.src_kind = mem_kind(m->srcKind);
  e.dst_kind = mem_kind(m->dstKind);
  e.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  e.device = static_cast<std::int32_t>(m->deviceId);
  e.stream = m->streamId;
  e.correlation = m->correlationId;
  e.stack = stack(h, m->correlationId);
  return e;
}

}  // namespace

Event convert(const CUpti_Activity* record, const Hooks& h) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      rec::KernelEvent e;
      e.start_ns = k->start;
      e.end_ns = k->end;
      e.name = intern(h, demangle(k->name));
      e.grid[0] = dim(k->gridX), e.grid[1] = dim(k->gridY), e.grid[2] = dim(k->gridZ);
      e.block[0] = dim(k->blockX), e.block[1] = dim(k->blockY), e.block[2] = dim(k->blockZ);
      e.shared_bytes = dim(k->staticSharedMemory) + dim(k->dynamicSharedMemory);
      e.device = static_cast<std::int32_t>(k->deviceId);
      e.stream = k->streamId;
      e.correlation = k->correlationId;
      e.stack = stack(h, k->correlationId);
      return e;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return copy_event(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), h);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {  // peer to peer
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      rec::MemcpyEvent e = copy_event(m, h);
      e.peer_device = static_cast<std::int32_t>(m->deviceId == m->srcDeviceId ? m->dstDeviceId : m->srcDeviceId);
      return e;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      rec::MemsetEvent e;
      e.start_ns = m->start;
      e.end_ns = m->end;
      e.bytes = m->bytes;
      e.value = m->value;
      e.kind = mem_kind(m->memoryKind);
      e.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
      e.device = static_cast<std::int32_t>(m->deviceId);
      e.stream = m->streamId;
      e.correlation = m->correlationId;
      e.stack = stack(h, m->correlationId);
      return e;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      if (h.is_query && h.is_query(s->correlationId)) return {};
      return rec::SyncEvent{.start_ns = s->start, .end_ns = s->end, .kind = sync_kind(s->type),
                            .stream = s->streamId == 0xffffffffu ? 0u : s->streamId, .event = s->cudaEventId,
                            .correlation = s->correlationId, .stack = stack(h, s->correlationId)};
    }
    default:
      return {};
  }
}

}  // namespace gpudiag::cupti
