#include "core/hooks.h"

#include <chrono>

#ifdef GDRT_WITH_RECORD
#include "gpudiag/record.h"
#endif

namespace gdrt::hooks {

#ifdef GDRT_WITH_RECORD
namespace rec = gpudiag::rec;
namespace {

std::int32_t device_id(const Device& d) { return d.is_cpu() ? gpudiag::kHostDevice : d.index; }

gpudiag::MemKind mem_kind(MemoryKind k) {
  switch (k) {
    case MemoryKind::host_pageable: return gpudiag::MemKind::Pageable;
    case MemoryKind::host_pinned: return gpudiag::MemKind::Pinned;
    case MemoryKind::device: return gpudiag::MemKind::Device;
  }
  return gpudiag::MemKind::Unknown;
}

gpudiag::MemKind storage_kind(const Device& d) { return d.is_cpu() ? gpudiag::MemKind::Pageable : gpudiag::MemKind::Device; }

}  // namespace

std::uint64_t now_ns() { return rec::now_ns(); }

void allocated(const Device& device, const void* ptr, std::size_t bytes) {
  if (!rec::enabled()) return;
  rec::record(rec::AllocEvent{.addr = reinterpret_cast<std::uintptr_t>(ptr), .bytes = bytes,
                              .kind = storage_kind(device), .device = device_id(device),
                              .stack = rec::capture_stack(2)});
}

void freed(const Device& device, const void* ptr, std::size_t bytes) {
  if (!rec::enabled()) return;
  rec::record(rec::FreeEvent{.addr = reinterpret_cast<std::uintptr_t>(ptr), .bytes = bytes,
                             .kind = storage_kind(device), .device = device_id(device)});
}

void copied(const Device& device, void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
            std::size_t bytes, std::uint64_t start_ns, std::uint64_t end_ns) {
  if (!rec::enabled()) return;
  rec::record(rec::MemcpyEvent{.start_ns = start_ns, .end_ns = end_ns, .dst = reinterpret_cast<std::uintptr_t>(dst),
                               .src = reinterpret_cast<std::uintptr_t>(src), .bytes = bytes,
                               .src_kind = mem_kind(src_kind), .dst_kind = mem_kind(dst_kind),
                               .device = device_id(device), .stack = rec::capture_stack(2)});
}

void host_read(const Device& device, const void* ptr, std::size_t bytes) {
  if (!rec::enabled()) return;
  rec::record(rec::HostAccessEvent{.addr = reinterpret_cast<std::uintptr_t>(ptr), .bytes = bytes,
                                   .access = gpudiag::AccessKind::Read, .device = device_id(device),
                                   .stack = rec::capture_stack(2)});
}

void finding(const std::string& rule, const std::string& message) {
  if (!rec::enabled()) return;
  rec::record(rec::FindingEvent{.rule_id = rec::intern(rule), .message = rec::intern(message),
                                .stack = rec::capture_stack(2)});
}

bool recording() { return rec::enabled(); }

void kernel(const Device& device, const char* name, std::uint64_t start_ns, std::uint64_t end_ns) {
  if (!rec::enabled()) return;
  // Interned on every call: ids belong to one trace, and a process may record several.
  rec::record(rec::KernelEvent{.start_ns = start_ns, .end_ns = end_ns, .name = rec::intern(name),
                               .device = device_id(device)});
}

void step(std::int64_t number, std::uint64_t start_ns, std::uint64_t end_ns) {
  if (!rec::enabled()) return;
  // Named as PyTorch's profiler names its steps, which is what reports read as iterations.
  rec::record(rec::RangeEvent{.start_ns = start_ns, .end_ns = end_ns,
                              .name = rec::intern("ProfilerStep#" + std::to_string(number))});
}

#else  // built without the recorder: hooks are no-ops

std::uint64_t now_ns() { return 0; }
void allocated(const Device&, const void*, std::size_t) {}
void freed(const Device&, const void*, std::size_t) {}
void copied(const Device&, void*, MemoryKind, const void*, MemoryKind, std::size_t, std::uint64_t, std::uint64_t) {}
void host_read(const Device&, const void*, std::size_t) {}
void finding(const std::string&, const std::string&) {}
bool recording() { return false; }
void kernel(const Device&, const char*, std::uint64_t, std::uint64_t) {}
void step(std::int64_t, std::uint64_t, std::uint64_t) {}

#endif

}  // namespace gdrt::hooks
