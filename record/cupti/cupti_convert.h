// CUPTI activity records (CUDA 13 layouts: CUpti_ActivityKernel10,
// CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4,
// CUpti_ActivitySynchronization2) turned into recording-API events. API
// calls and allocations come from callbacks instead (callbacks.cpp). Pure: no CUPTI calls, so it is tested
// with records built in the test.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string_view>
#include <variant>

#include "gpudiag/record.h"

namespace gpudiag::cupti {

struct Hooks {
  std::function<rec::StringId(std::string_view)> intern;
  // Host stack captured when the API call with this correlation id began, or 0.
  std::function<rec::StackId(std::uint32_t)> stack_of;
  // Whether the call with this correlation id was a stream or event query:
  // CUPTI reports a cudaEventQuery as an event synchronisation, but the host
  // did not wait in it (a query that found its work done is recorded from
  // its callback, as SyncKind::Query).
  std::function<bool(std::uint32_t)> is_query;
};

using Event = std::variant<std::monostate, rec::MemcpyEvent, rec::MemsetEvent, rec::KernelEvent, rec::SyncEvent>;

// The event for one record; monostate for kinds gpudiag does not model.
Event convert(const CUpti_Activity* record, const Hooks& hooks);

MemKind mem_kind(std::uint32_t cupti_memory_kind);
CopyKind copy_kind(std::uint32_t cupti_memcpy_kind);
SyncKind sync_kind(std::uint32_t cupti_sync_type);

}  // namespace gpudiag::cupti
