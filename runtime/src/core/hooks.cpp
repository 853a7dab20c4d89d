#include "core/hooks.h"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#ifdef GDRT_WITH_RECORD
#include "gpudiag/record.h"
#endif

namespace gdrt::hooks {

#ifdef GDRT_WITH_RECORD
namespace rec = gpudiag::rec;
namespace {

gpudiag::MemKind mem_kind(MemoryKind k) {
  switch (k) {
    case MemoryKind::host_pageable: return gpudiag::MemKind::Pageable;
    case MemoryKind::host_pinned: return gpudiag::MemKind::Pinned;
    case MemoryKind::device: return gpudiag::MemKind::Device;
  }
  return gpudiag::MemKind::Unknown;
}

// Names a device in the trace the first time this thread records for it
// there (a process may record several traces, each needs its own record).
void describe_once(const Device& device) {
  thread_local std::vector<std::pair<std::int32_t, std::string>> described;
  const std::int32_t id = trace_device_id(device);
  const char* path = rec::trace_path();
  for (auto& [d, p] : described)
    if (d == id) {
      if (p == path) return;
      p = path;
      rec::record(rec::DeviceInfo{.id = id, .name = rec::intern("gdrt " + device.str())});
      return;
    }
  described.emplace_back(id, path);
  rec::record(rec::DeviceInfo{.id = id, .name = rec::intern("gdrt " + device.str())});
}

// The allocation's device in the trace: pinned memory is host memory.
std::int32_t memory_device(const Device& d, MemoryKind kind) {
  return kind == MemoryKind::host_pinned ? gpudiag::kHostDevice : trace_device_id(d);
}

}  // namespace

std::uint64_t now_ns() { return rec::now_ns(); }

void allocated(const Device& device, const void* ptr, std::size_t bytes, MemoryKind kind, StreamId stream) {
  if (!recording(device)) return;
  if (!device.is_cpu()) describe_once(device);
  rec::record(rec::AllocEvent{.addr = reinterpret_cast<std::uintptr_t>(ptr), .bytes = bytes, .kind = mem_kind(kind),
                              .device = memory_device(device, kind), .stream = stream,
                              .stack = rec::capture_stack(2)});
}

void freed(const Device& device, const void* ptr, std::size_t bytes, MemoryKind kind, StreamId stream,
           const std::vector<StreamId>& used_on) {
  if (!recording(device)) return;
  // A trace's free has one stream. A block recorded on other streams is
  // freed in the order of the last of them, after an event wait for the
  // others (its own stream included): the allocator waits for all of them
  // before it reuses the block.
  const StreamId ordered_on = used_on.empty() ? stream : used_on.back();
  const std::int32_t dev = memory_device(device, kind);
  const auto now = rec::now_ns();
  if (!used_on.empty())
    rec::record(rec::SyncEvent{.start_ns = now, .end_ns = now, .kind = gpudiag::SyncKind::StreamWaitEvent,
                               .device = dev, .stream = ordered_on});
  rec::record(rec::FreeEvent{.time_ns = now + (used_on.empty() ? 0 : 1), .addr = reinterpret_cast<std::uintptr_t>(ptr),
                             .bytes = bytes, .kind = mem_kind(kind), .device = dev, .stream = ordered_on,
                             .stack = rec::capture_stack(2)});
}

namespace {
// Copies queued and not yet run, by id: where the program asked for each and
// whether it asked for an asynchronous one.
struct QueuedCopy {
  gpudiag::StackId stack;
  bool async;
};
std::mutex g_copy_stacks_mutex;
std::unordered_map<std::uint64_t, QueuedCopy> g_copy_stacks;
}  // namespace

std::uint64_t copy_queued(const Device& device, bool async) {
  if (!recording(device)) return 0;
  static std::atomic<std::uint64_t> next{std::uint64_t{3} << 48};
  const std::uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  const gpudiag::StackId stack = rec::capture_stack(2);
  const auto now = rec::now_ns();
  rec::record(rec::ApiEvent{.start_ns = now, .end_ns = now, .name = rec::intern("gdrt::copy"),
                            .domain = gpudiag::ApiDomain::Gdrt, .device = trace_device_id(device), .correlation = id,
                            .stack = stack});
  std::lock_guard lock(g_copy_stacks_mutex);
  g_copy_stacks.emplace(id, QueuedCopy{stack, async});
  return id;
}

void copy_ran(const Device& device, std::uint64_t id, void* dst, MemoryKind dst_kind, const void* src,
              MemoryKind src_kind, std::size_t bytes, std::uint64_t start_ns, std::uint64_t end_ns, StreamId stream) {
  QueuedCopy queued{0, false};
  {
    std::lock_guard lock(g_copy_stacks_mutex);
    if (auto it = g_copy_stacks.find(id); it != g_copy_stacks.end()) {
      queued = it->second;
      g_copy_stacks.erase(it);
    }
  }
  if (!rec::enabled() || id == 0) return;
  // Asynchronous as the program asked (cudaMemcpyAsync), not as it ran: an
  // asynchronous copy from pageable memory is the mistake GD009 names.
  const gpudiag::StackId stack = queued.stack;
  const bool async = queued.async;
  rec::record(rec::MemcpyEvent{.start_ns = start_ns, .end_ns = end_ns, .dst = reinterpret_cast<std::uintptr_t>(dst),
                               .src = reinterpret_cast<std::uintptr_t>(src), .bytes = bytes,
                               .src_kind = mem_kind(src_kind), .dst_kind = mem_kind(dst_kind), .async = async,
                               .device = trace_device_id(device), .stream = stream, .correlation = id,
                               .stack = stack});
}

void synchronized(const Device& device, SyncScope scope, StreamId stream, std::uint64_t start_ns,
                  std::uint64_t end_ns) {
  if (!recording(device)) return;
  const auto kind = scope == SyncScope::stream   ? gpudiag::SyncKind::Stream
                    : scope == SyncScope::device ? gpudiag::SyncKind::Device
                                                 : gpudiag::SyncKind::Event;
  rec::record(rec::SyncEvent{.start_ns = start_ns, .end_ns = end_ns, .kind = kind, .device = trace_device_id(device),
                             .stream = stream, .stack = rec::capture_stack(3)});
}

void out_of_memory(const Device& device, std::size_t requested, std::size_t free, std::size_t capacity) {
  if (!recording(device)) return;
  rec::record(rec::OutOfMemoryEvent{.requested_bytes = requested, .free_bytes = free, .capacity_bytes = capacity,
                                    .device = trace_device_id(device), .stack = rec::capture_stack(2)});
}

void host_access(const Device& owner, const void* ptr, std::size_t bytes, bool write) {
  if (!rec::enabled()) return;
  rec::record(rec::HostAccessEvent{.addr = reinterpret_cast<std::uintptr_t>(ptr), .bytes = bytes,
                                   .access = write ? gpudiag::AccessKind::Write : gpudiag::AccessKind::Read,
                                   .device = trace_device_id(owner), .stack = rec::capture_stack(2)});
}

void finding(const std::string& rule, const std::string& message) {
  if (!rec::enabled()) return;
  rec::record(rec::FindingEvent{.rule_id = rec::intern(rule), .message = rec::intern(message),
                                .stack = rec::capture_stack(2)});
}

bool recording() { return rec::enabled(); }

bool recording(const Device& device) {
  return rec::enabled() && !(device.kind == DeviceKind::cuda && rec::gpu_work_traced());
}

std::uint64_t launched(const Device& device, const KernelOp& op, StreamId stream) {
  if (!recording(device)) return 0;
  // Ids of their own range, apart from CUPTI's correlation ids in the same trace.
  static std::atomic<std::uint64_t> next{std::uint64_t{1} << 48};
  const std::uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  const auto now = rec::now_ns();
  const auto stack = rec::capture_stack(3);
  const std::int32_t dev = trace_device_id(device);
  rec::record(rec::ApiEvent{.start_ns = now, .end_ns = now, .name = rec::intern(kernel_name(op)),
                            .domain = gpudiag::ApiDomain::Gdrt, .device = dev, .correlation = id, .stack = stack,
                            .symbol = rec::intern(kernel_name(op))});
  std::uint32_t index = 0;
  for_each_buffer(op, [&](auto* p, std::size_t, Access) {
    rec::record(rec::KernelArgEvent{.time_ns = now, .value = reinterpret_cast<std::uintptr_t>(p), .index = index,
                                    .memory = gpudiag::MemKind::Device, .device = dev, .stream = stream,
                                    .correlation = id, .stack = stack});
    ++index;
  });
  return id;
}

void kernel(const Device& device, const char* name, std::uint64_t start_ns, std::uint64_t end_ns, StreamId stream,
            std::uint64_t launch_id) {
  if (!recording(device)) return;
  // Interned on every call: ids belong to one trace, and a process may record several.
  rec::record(rec::KernelEvent{.start_ns = start_ns, .end_ns = end_ns, .name = rec::intern(name),
                               .device = trace_device_id(device), .stream = stream, .correlation = launch_id});
}

void step(std::int64_t number, std::uint64_t start_ns, std::uint64_t end_ns) {
  if (!rec::enabled()) return;
  // Named as PyTorch's profiler names its steps, which is what reports read as iterations.
  rec::record(rec::RangeEvent{.start_ns = start_ns, .end_ns = end_ns,
                              .name = rec::intern("ProfilerStep#" + std::to_string(number))});
}

#else  // built without the recorder: hooks are no-ops

std::uint64_t now_ns() { return 0; }
void allocated(const Device&, const void*, std::size_t, MemoryKind, StreamId) {}
void freed(const Device&, const void*, std::size_t, MemoryKind, StreamId, const std::vector<StreamId>&) {}
std::uint64_t copy_queued(const Device&, bool) { return 0; }
void copy_ran(const Device&, std::uint64_t, void*, MemoryKind, const void*, MemoryKind, std::size_t, std::uint64_t,
              std::uint64_t, StreamId) {}
void synchronized(const Device&, SyncScope, StreamId, std::uint64_t, std::uint64_t) {}
void out_of_memory(const Device&, std::size_t, std::size_t, std::size_t) {}
void host_access(const Device&, const void*, std::size_t, bool) {}
void finding(const std::string&, const std::string&) {}
std::uint64_t launched(const Device&, const KernelOp&, StreamId) { return 0; }
void kernel(const Device&, const char*, std::uint64_t, std::uint64_t, StreamId, std::uint64_t) {}
void step(std::int64_t, std::uint64_t, std::uint64_t) {}
bool recording() { return false; }
bool recording(const Device&) { return false; }

#endif

}  // namespace gdrt::hooks
