// A trace with events of most kinds, for the .gdtrace tests: a few thousand
// allocations and kernels on two threads, a crash, strings and stacks.
#pragma once

#include "gpudiag/trace.h"

namespace gpudiag::test {

inline Trace sample_trace() {
  Trace t;
  t.pid = 42;
  t.command = "train --epochs 1";
  t.dropped_events = 3;
  t.devices.push_back({0, t.intern("NVIDIA A100"), 80ull << 30});
  t.streams.push_back({0, 7, t.intern("stream 7")});
  Stack s;
  s.frames.push_back({.ip = 0x401000});
  s.frames.push_back({.ip = 0x402000});
  const StackId st = t.add_stack(s);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    t.allocs.push_back({.time_ns = 10 * i, .addr = 0x1000 + i, .bytes = 256, .kind = MemKind::Device, .device = 0, .tid = 1, .stack = st});
    t.kernels.push_back({.start_ns = 10 * i + 1, .end_ns = 10 * i + 5, .name = t.intern("k" + std::to_string(i % 7)),
                         .grid = {1, 2, 3}, .block = {4, 5, 6}, .device = 0, .stream = 7, .tid = 2});
  }
  t.memcpys.push_back({.start_ns = 5, .end_ns = 9, .bytes = 8, .copy = CopyKind::DtoH, .src_kind = MemKind::Device,
                       .dst_kind = MemKind::Pinned, .async = true, .device = 0, .stream = 7});
  t.memory_counters.push_back({.time_ns = 3, .device = 0, .allocated_bytes = 100, .reserved_bytes = 200});
  t.findings.push_back({.time_ns = 4, .rule_id = t.intern("GD005"), .message = t.intern("scalar access")});
  t.ranges.push_back({.start_ns = 2, .end_ns = 40, .name = t.intern("ProfilerStep#1"), .tid = 1});
  Stack fault;
  fault.starts_at_fault = true;
  fault.frames.push_back({.ip = 0x401234});
  t.crashes.push_back({.time_ns = 50000, .signal = 11, .code = 2, .address = 0xdead000, .tid = 9, .stack = t.add_stack(fault)});
  return t;
}

}  // namespace gpudiag::test
