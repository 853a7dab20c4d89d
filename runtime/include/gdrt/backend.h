// The backend seam: one Backend per device (cpu, emu, cuda), made by the
// factory its folder registers. Memory, copies, streams, events and kernel
// launches (one op descriptor through one entry point, gdrt/kernel_op.h) all
// go through it. Pointers a backend hands out may be ones the host cannot
// dereference: only the backend reads or writes through them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gdrt/device.h"
#include "gdrt/dtype.h"
#include "gdrt/kernel_op.h"

namespace gdrt {

// Where the bytes of a copy live, as in cudaMemcpyKind plus pinned-ness.
enum class MemoryKind : std::uint8_t { host_pageable, host_pinned, device };

using StreamId = std::uint64_t;  // 0 is the device's default stream
using EventId = std::uint64_t;

// What a backend does with a stream created for the program.
enum class StreamFlags : std::uint8_t {
  blocking,      // synchronises with the legacy default stream, as cudaStreamDefault
  non_blocking,  // exempt from it, as cudaStreamNonBlocking
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // False when the device exists in this build but cannot run (no GPU, no
  // driver); functional() on the public side asks this.
  virtual bool functional() const { return true; }

  // Device memory, stream-ordered: a block is allocated for use on `stream`
  // and, once freed there, may serve the next allocation on that stream at
  // once and other streams when the stream's earlier work is done, as
  // cudaMallocAsync/cudaFreeAsync and PyTorch's caching allocator.
  // `used_on` lists the other streams that used the block (record_stream):
  // the block is not reused before their work queued so far completes.
  // Throws gdrt::Error (rule GD008 on exhaustion).
  virtual void* allocate(std::size_t bytes, StreamId stream) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes, StreamId stream, const std::vector<StreamId>& used_on) = 0;
  // Host memory the device copies to and from asynchronously (page-locked).
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void deallocate_pinned(void* ptr, std::size_t bytes) = 0;

  // Ordered on `stream` with cudaMemcpyAsync's semantics: a copy between
  // device memory and pinned host memory (or within the device) returns at
  // once and runs later; one that involves pageable host memory returns
  // only when it is done.
  // `trace_id`: when non-zero, the backend records the copy when it runs
  // (hooks::copy_ran, with its start and end) under that id.
  virtual void copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes,
                    StreamId stream, std::uint64_t trace_id) = 0;
  // Queues one kernel on `stream`. Pointers in the op are this backend's.
  // `launch_id` is repeated in the kernel's trace event (0: not recording).
  virtual void launch(const KernelOp& op, StreamId stream, std::uint64_t launch_id) = 0;

  virtual StreamId create_stream(StreamFlags flags) = 0;
  virtual void destroy_stream(StreamId stream) = 0;
  virtual EventId record_event(StreamId stream) = 0;
  // The event is no longer waited on or synchronised with.
  virtual void destroy_event(EventId event) = 0;
  virtual void wait_event(StreamId stream, EventId event) = 0;
  virtual void synchronize_event(EventId event) = 0;
  virtual void synchronize(StreamId stream) = 0;
  virtual void synchronize_device() = 0;
  // True if the host may dereference this backend's memory (cpu only).
  virtual bool host_accessible() const = 0;
};

using BackendFactory = std::function<std::unique_ptr<Backend>(int index)>;
// How many devices of a kind this machine has (cudaGetDeviceCount for cuda).
using DeviceCounter = std::function<int()>;

// Registers the factory for a device kind (a backend folder calls this once),
// replacing any before it. `count` says how many devices of the kind exist:
// the search for the first functional GPU walks them. Without it only index
// 0 is tried.
void register_backend(DeviceKind kind, BackendFactory factory, DeviceCounter count = {});
bool backend_registered(DeviceKind kind);
// The backend serving `device`, created on first use; throws gdrt::Error if
// this build has no backend for the device kind.
Backend& backend(const Device& device);

}  // namespace gdrt
