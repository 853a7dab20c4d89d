// Small helpers to build Traces in tests, one event at a time.
#pragma once

#include <string>
#include <vector>

#include "gpudiag/trace.h"

namespace gpudiag::testing {

inline StackId stack_named(Trace& t, const std::string& function, const std::string& file = "train.cpp",
                           std::uint32_t line = 1) {
  Stack s;
  StackFrame f;
  f.ip = 0x1000 + line;
  f.function = t.intern(function);
  f.file = t.intern(file);
  f.line = line;
  s.frames.push_back(f);
  return t.add_stack(std::move(s));
}

inline void alloc(Trace& t, std::uint64_t time, std::uint64_t addr, std::uint64_t bytes, std::int32_t device = 0,
                  StackId stack = kNoStack, MemKind kind = MemKind::Device) {
  t.allocs.push_back({.time_ns = time, .addr = addr, .bytes = bytes, .kind = kind, .device = device, .stack = stack});
}

inline void free_at(Trace& t, std::uint64_t time, std::uint64_t addr, std::int32_t device = 0, std::uint64_t stream = 0,
                    StackId stack = kNoStack) {
  t.frees.push_back({.time_ns = time, .addr = addr, .device = device, .stream = stream, .stack = stack});
}

inline void kernel(Trace& t, std::uint64_t start, std::uint64_t end, const std::string& name, std::int32_t device = 0,
                   std::uint64_t stream = 7, std::uint64_t correlation = 0) {
  t.kernels.push_back({.start_ns = start, .end_ns = end, .name = t.intern(name), .device = device, .stream = stream,
                       .correlation = correlation});
}

inline Memcpy copy(std::uint64_t start, std::uint64_t end, CopyKind kind, std::uint64_t bytes, bool async,
                   MemKind host_kind = MemKind::Pinned) {
  Memcpy m;
  m.start_ns = start;
  m.end_ns = end;
  m.copy = kind;
  m.bytes = bytes;
  m.async = async;
  m.device = 0;
  m.stream = 7;
  m.src_kind = kind == CopyKind::HtoD ? host_kind : MemKind::Device;
  m.dst_kind = kind == CopyKind::DtoH ? host_kind : MemKind::Device;
  return m;
}

// A kernel parameter: its value and the memory the recorder saw it in.
struct LaunchArg {
  std::uint64_t value;
  MemKind memory;
};

// Launch `id` (its correlation) of `symbol` at `time` on `stream`, passing
// `args` as parameters 0, 1, ...; the kernel ran until `end` (no record of
// its run when 0, as for a kernel that faulted).
inline void launch(Trace& t, std::uint64_t id, std::uint64_t time, const std::string& symbol, std::uint64_t stream,
                   const std::vector<LaunchArg>& args, std::uint64_t end = 0, StackId stack = kNoStack) {
  if (stack == kNoStack) stack = stack_named(t, "launch_site", "train.cu", 30);
  t.api_calls.push_back({.start_ns = time, .end_ns = time + 2, .name = t.intern("cudaLaunchKernel"),
                         .domain = ApiDomain::Runtime, .device = 0, .correlation = id, .stack = stack,
                         .symbol = t.intern(symbol)});
  for (std::uint32_t i = 0; i < args.size(); ++i)
    t.kernel_args.push_back({.time_ns = time, .value = args[i].value, .index = i, .memory = args[i].memory,
                             .device = 0, .stream = stream, .correlation = id});
  if (end != 0) kernel(t, time + 5, end, symbol, 0, stream, id);
}

// A CUDA runtime call `name` at `time` that returned `status`; its stack is
// one frame named as the call.
inline void call(Trace& t, std::uint64_t time, const char* name, std::int32_t status = 0,
                 std::uint64_t correlation = 0) {
  t.api_calls.push_back({.start_ns = time, .end_ns = time + 1, .name = t.intern(name), .domain = ApiDomain::Runtime,
                         .status = status, .correlation = correlation,
                         .stack = stack_named(t, name, "train.cu", 40)});
}

inline void sync(Trace& t, std::uint64_t time, SyncKind kind, std::uint64_t stream = 0) {
  t.syncs.push_back({.start_ns = time, .end_ns = time + 3, .kind = kind, .stream = stream});
}

// Two 4 MiB device buffers the launches above are given.
inline constexpr std::uint64_t kSrc = 0x302000000;
inline constexpr std::uint64_t kOut = 0x302400000;
inline constexpr std::uint64_t kMiB4 = 4ull << 20;

// A loop of `steps` iterations, each launching the same 20 kernels; the
// host syncs at the end of every step for `sync_ns` of the 1 ms step. The
// loop starts at `start_ns` (what comes before is start-up).
inline void append_training_loop(Trace& t, int steps, std::uint64_t sync_ns, std::uint64_t start_ns) {
  for (int s = 0; s < steps; ++s) {
    const std::uint64_t base = start_ns + 1'000'000ull * s;
    for (int k = 0; k < 20; ++k) kernel(t, base + 40'000ull * k, base + 40'000ull * k + 30'000, "op" + std::to_string(k));
    if (sync_ns) t.syncs.push_back({.start_ns = base + 1'000'000 - sync_ns, .end_ns = base + 1'000'000 - 1,
                                    .kind = SyncKind::Device, .device = 0});
  }
}
inline Trace training_loop(int steps, std::uint64_t sync_ns, std::uint64_t start_ns = 0) {
  Trace t;
  append_training_loop(t, steps, sync_ns, start_ns);
  return t;
}

// A run of `steps` 1 ms steps on device 0 after three 64 MiB weights that
// live throughout: step s allocates `per_step` activations one after the
// other, 10 us apart, each of (s + 1) MiB and a few pages and freed 9 us
// later. The later steps' are the larger, so that over the whole run the
// largest allocations (bytes x lifetime) are the weights and the last steps'.
inline constexpr std::uint64_t kWeightsAddr = 0x10000000000;
inline std::uint64_t activation_addr(int step, int j, int per_step) {
  return 0x20000000000 + (static_cast<std::uint64_t>(step) * per_step + j) * (1ull << 28);
}
inline std::uint64_t step_start_ns(int step) { return 1'000'000ull * (step + 1); }
inline Trace weights_and_activations(int steps, int per_step) {
  Trace t;
  t.path = "steps.gdtrace";
  for (std::uint64_t i = 0; i < 3; ++i)
    alloc(t, 1000 * i, kWeightsAddr + (i << 28), 64ull << 20, 0, stack_named(t, "init_weights", "model.py", 10));
  std::vector<StackId> sites;
  for (int j = 0; j < per_step; ++j) sites.push_back(stack_named(t, "forward", "model.py", 100 + j));
  for (int s = 0; s < steps; ++s)
    for (int j = 0; j < per_step; ++j) {
      const std::uint64_t at = step_start_ns(s) + 10'000ull * j, addr = activation_addr(s, j, per_step);
      alloc(t, at, addr, (static_cast<std::uint64_t>(s + 1) << 20) + 4096ull * j, 0, sites[j]);
      free_at(t, at + 9'000, addr);
    }
  return t;
}

}  // namespace gpudiag::testing
