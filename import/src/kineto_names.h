// How Kineto (PyTorch profiler) names GPU activities, decoded.
#pragma once

#include <optional>
#include <string_view>

#include "gpudiag/event_types.h"

namespace gpudiag::import {

struct CopyDescription {
  CopyKind copy = CopyKind::Unknown;
  MemKind src = MemKind::Unknown;
  MemKind dst = MemKind::Unknown;
};

// "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoD (Device -> Device)",
// "Memcpy PtoP", "Memcpy DtoH" ... Kinds missing from the name are Unknown,
// except that the direction implies Device for the device side.
CopyDescription parse_memcpy_name(std::string_view name);
// "Memset (Device)" -> Device.
MemKind parse_memset_name(std::string_view name);
// "Pageable", "Pinned", "Device", "Managed", "Array" (any case).
MemKind parse_mem_kind(std::string_view word);
// cuda_sync "Stream Sync" / "Event Sync" / "Context Sync" / "Stream Wait Event"
// and runtime calls "cudaStreamSynchronize" ... Empty when not a sync.
std::optional<SyncKind> parse_sync_name(std::string_view name);
// Runtime calls that synchronise the host: cudaDeviceSynchronize etc.
std::optional<SyncKind> sync_of_runtime_call(std::string_view name);

}  // namespace gpudiag::import
