// Tracing hooks: the only place libgdrt talks to the recording API
// (gpudiag/record.h). Every call is one relaxed load and a branch when no
// trace is being recorded, and compiles to nothing without the recorder.
#pragma once

#include <cstdint>
#include <string>

#include "gdrt/backend.h"

namespace gdrt::hooks {

// What a host wait covered.
enum class SyncScope : std::uint8_t { stream, device, event };

// Device memory is stream-ordered: `stream` is the one it is allocated for
// and freed on (a free there is ordered after that stream's earlier work).
void allocated(const Device& device, const void* ptr, std::size_t bytes, MemoryKind kind, StreamId stream);
// `used_on`: the other streams it was recorded on (record_stream), whose
// earlier work the free waits for too.
void freed(const Device& device, const void* ptr, std::size_t bytes, MemoryKind kind, StreamId stream,
           const std::vector<StreamId>& used_on);
// A copy is being queued on `device`: records the call (as CUPTI records
// cudaMemcpyAsync) and returns the id its backend passes to copy_ran, which
// links the two (0 when not recording). The program's stack is taken here,
// where it asked for the copy, not where the backend runs it. `async`: the
// program asked for an asynchronous copy (cudaMemcpyAsync, not cudaMemcpy);
// whether it could really run so is the host memory's kind, recorded with it.
std::uint64_t copy_queued(const Device& device, bool async);
// Copy `id` ran from start to end, or was queued at start where the backend
// cannot time it (end_ns 0).
void copy_ran(const Device& device, std::uint64_t id, void* dst, MemoryKind dst_kind, const void* src,
              MemoryKind src_kind, std::size_t bytes, std::uint64_t start_ns, std::uint64_t end_ns, StreamId stream);
// The host waited for `device` from start to end.
void synchronized(const Device& device, SyncScope scope, StreamId stream, std::uint64_t start_ns,
                  std::uint64_t end_ns);
// An allocation of `requested` bytes failed with `free` of `capacity` left.
void out_of_memory(const Device& device, std::size_t requested, std::size_t free, std::size_t capacity);
// The host read or wrote `bytes` at ptr directly (a pinned buffer's contents).
void host_access(const Device& owner, const void* ptr, std::size_t bytes, bool write);
// A rule the runtime detected itself (GD001, GD002, GD005), before it throws.
void finding(const std::string& rule, const std::string& message);
// A launch of `op` on `device`'s `stream` was queued: its pointer arguments,
// under the returned id that its kernel() event repeats (0 when not recording).
std::uint64_t launched(const Device& device, const KernelOp& op, StreamId stream);
// Kernel `name` (a string literal) ran on `device` from start to end.
void kernel(const Device& device, const char* name, std::uint64_t start_ns, std::uint64_t end_ns, StreamId stream,
            std::uint64_t launch_id);
// Training step `number` ran from start to end (gdrt::TrainingStep).
void step(std::int64_t number, std::uint64_t start_ns, std::uint64_t end_ns);
// True while a trace is being recorded (one relaxed load).
bool recording();
// True while a trace is being recorded and `device`'s work is the hooks' to
// record: not a cuda device's under the CUPTI tracer, which records CUDA's
// work itself (kernels, copies, syncs, allocations) with its own stream ids.
// The hooks of a device's work (memory, copies, kernels, syncs, out of
// memory) record nothing when this is false; host_access, which only emu's
// fault handler calls, asks enabled().
bool recording(const Device& device);
std::uint64_t now_ns();

}  // namespace gdrt::hooks
