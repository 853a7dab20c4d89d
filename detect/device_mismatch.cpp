// GD001 device-mismatch at run time: the host touched memory that lives on a
// device (the emu device faults on it; on CUDA it is a segfault or an
// illegal address), seen as a recorded host access or as the address of the
// fault the program died of. The allocation's stack goes in a note.
// And the other way round: a kernel given a pointer into pageable host
// memory, which the GPU cannot read, when a kernel error (700) followed the
// launch.
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

namespace {

// The device allocation (not managed memory, which the host may touch) live at addr at time t.
const Block* device_block(const DetectContext& ctx, std::uint64_t addr, std::uint64_t t, std::int32_t& device) {
  for (const DeviceMemory& m : ctx.memory.devices) {
    if (m.device == kHostDevice) continue;
    const Block* b = block_containing(m, addr, t);
    if (b && (b->kind == MemKind::Device || b->kind == MemKind::Unknown)) {
      device = m.device;
      return b;
    }
  }
  return nullptr;
}

// Launches given the same pageable parameter from the same place: one finding.
struct PageableUse {
  const KernelArg* first = nullptr;
  std::uint64_t launches = 0;
};

Finding pageable_argument_finding(const DetectContext& ctx, const Launches& launches, const PageableUse& use) {
  const Trace& t = ctx.trace;
  const KernelArg& a = *use.first;
  const ApiCall* error = kernel_error_after(t, a.time_ns);  // there is one: report_pageable_arguments checked
  std::string msg = fmt::format(
      "kernel {} was given pageable host memory as parameter {} (0x{:x}{}): memory from malloc, new or the stack, "
      "which the GPU cannot read, since it was neither allocated with cudaMallocHost nor registered with "
      "cudaHostRegister",
      launches.kernel_name(a.correlation), a.index, a.value,
      use.launches > 1 ? fmt::format(", in {} launches", use.launches) : "");
  msg += fmt::format("; error {} at {} followed, {} after the launch: this launch is its likely cause",
                     cuda_error_text(error->status), t.str(error->name), format_duration(error->start_ns - a.time_ns));
  msg += ". Copy the data into device memory (cudaMalloc and cudaMemcpy) and pass that pointer, or allocate the buffer "
         "with cudaMallocHost or cudaMallocManaged";
  Finding f = make_finding(ctx, std::move(msg));
  f.stack = frames_of(t, launches.stack(a));
  if (const Block* b = block_holding(ctx.memory, a.value, a.time_ns); b && b->stack != kNoStack)
    f.notes.push_back({"the host memory was allocated here", {}, frames_of(t, b->stack)});
  f.notes.push_back({fmt::format("error {} was reported here", error->status), {}, frames_of(t, error->stack)});
  return f;
}

void report_pageable_arguments(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.kernel_args.empty()) return;
  const Launches launches(t);
  std::map<std::tuple<std::string, std::uint32_t, StackId>, std::size_t> group_of;  // kernel, parameter, launch site
  std::vector<PageableUse> uses;
  for (const KernelArg& a : t.kernel_args) {
    // A value the driver does not know that lies in mapped host memory is
    // malloc'd memory or a number that happens to look like its address (an
    // element count inside a non-PIE executable's image): only the kernel
    // error that follows tells them apart.
    if (!is_pageable_argument(ctx.memory, a) || kernel_error_after(t, a.time_ns) == nullptr) continue;
    const auto key = std::make_tuple(launches.kernel_name(a.correlation), a.index,
                                     ctx.memory.canonical_stack(launches.stack(a)));
    const auto [it, fresh] = group_of.try_emplace(key, uses.size());
    if (fresh) uses.push_back({&a, 0});
    ++uses[it->second].launches;
  }
  for (const PageableUse& use : uses) out.push_back(pageable_argument_finding(ctx, launches, use));
}

}  // namespace

void detect_device_mismatch(const DetectContext& ctx, std::vector<Finding>& out) {
  for (const Crash& c : ctx.trace.crashes) {
    std::int32_t device = 0;
    const Block* b = is_memory_fault(c) ? device_block(ctx, c.address, c.time_ns, device) : nullptr;
    if (!b) continue;
    Finding f = make_finding(
        ctx, fmt::format("the host dereferenced device memory and the program died of it: the fault address 0x{:x} "
                         "lies inside {} of {} allocated at 0x{:x}; the host cannot read or write device "
                         "memory: copy the data to the host first (cudaMemcpy / tensor.to(cpu)) or keep the "
                         "computation on the device",
                         c.address, format_bytes(b->bytes), ctx.trace.device_label(device), b->addr));
    f.stack = frames_of(ctx.trace, c.stack);
    f.notes.push_back({"the device allocation was made here", {}, frames_of(ctx.trace, b->stack)});
    out.push_back(std::move(f));
  }
  for (const HostAccess& a : ctx.trace.host_accesses) {
    for (const DeviceMemory& m : ctx.memory.devices) {
      if (m.device == kHostDevice) continue;
      const Block* b = block_containing(m, a.addr, a.time_ns);
      if (!b || (b->kind != MemKind::Device && b->kind != MemKind::Unknown)) continue;
      Finding f =
          make_finding(ctx, fmt::format("host {} of {} at 0x{:x}, inside device memory of {} ({} allocated at 0x{:x}); "
                                        "the host cannot dereference device memory: copy the data to the host first "
                                        "(cudaMemcpy / tensor.to(cpu)) or keep the computation on the device",
                                        a.access == AccessKind::Read ? "read" : "write", format_bytes(a.bytes), a.addr,
                                        ctx.trace.device_label(m.device), format_bytes(b->bytes), b->addr));
      f.stack = frames_of(ctx.trace, a.stack);
      f.notes.push_back({"the device allocation was made here", {}, frames_of(ctx.trace, b->stack)});
      out.push_back(std::move(f));
      break;
    }
  }
  report_pageable_arguments(ctx, out);
}

}  // namespace gpudiag
