// CUPTI activity records (CUDA 13 layouts: CUpti_ActivityKernel10,
// CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4, CUpti_ActivityMemory4,
// CUpti_ActivitySynchronization2, CUpti_ActivityAPI, CUpti_ActivityOverhead3)
// turned into recording-API events. Pure: no CUPTI calls, so it is tested
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
  // Name of a runtime/driver API call by callback id (cuptiGetCallbackName).
  std::function<const char*(CUpti_CallbackDomain, CUpti_CallbackId)> api_name;
  // Host stack captured when the API call with this correlation id began, or 0.
  std::function<rec::StackId(std::uint32_t)> stack_of;
};

using Event = std::variant<std::monostate, rec::AllocEvent, rec::FreeEvent, rec::MemcpyEvent, rec::MemsetEvent,
                           rec::KernelEvent, rec::SyncEvent, rec::ApiEvent>;

// The event for one record; monostate for kinds gpudiag does not model.
Event convert(const CUpti_Activity* record, const Hooks& hooks);

MemKind mem_kind(std::uint32_t cupti_memory_kind);
CopyKind copy_kind(std::uint32_t cupti_memcpy_kind);
SyncKind sync_kind(std::uint32_t cupti_sync_type);

}  // namespace gpudiag::cupti
