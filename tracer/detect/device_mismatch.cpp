// GD001 device-mismatch at run time: the host touched memory that lives on a
// device (the emu device faults on it; on CUDA it is a segfault or an
// illegal address), seen as a recorded host access or as the address of the
// fault the program died of. The allocation's stack goes in a note.
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

}  // namespace

void detect_device_mismatch(const DetectContext& ctx, std::vector<Finding>& out) {
  for (const Crash& c : ctx.trace.crashes) {
    std::int32_t device = 0;
    const Block* b = is_memory_fault(c) ? device_block(ctx, c.address, c.time_ns, device) : nullptr;
    if (!b) continue;
    Finding f = make_finding(
        "GD001", fmt::format("the host dereferenced device memory and the program died of it: the fault address 0x{:x} "
                             "lies inside {} of device {} allocated at 0x{:x}; the host cannot read or write device "
                             "memory: copy the data to the host first (cudaMemcpy / tensor.to(cpu)) or keep the "
                             "computation on the device",
                             c.address, format_bytes(b->bytes), device, b->addr));
    f.stack = frames_of(ctx.trace, c.stack);
    f.notes.push_back({"the device allocation was made here", {}, frames_of(ctx.trace, b->stack)});
    out.push_back(std::move(f));
  }
  for (const HostAccess& a : ctx.trace.host_accesses) {
    for (const DeviceMemory& m : ctx.memory.devices) {
      if (m.device == kHostDevice) continue;
      const Block* b = block_containing(m, a.addr, a.time_ns);
      if (!b || (b->kind != MemKind::Device && b->kind != MemKind::Unknown)) continue;
      Finding f = make_finding(
          "GD001", fmt::format("host {} of {} at 0x{:x}, inside device memory of device {} ({} allocated at 0x{:x}); "
                               "the host cannot dereference device memory: copy the data to the host first "
                               "(cudaMemcpy / tensor.to(cpu)) or keep the computation on the device",
                               a.access == AccessKind::Read ? "read" : "write", format_bytes(a.bytes), a.addr,
                               m.device, format_bytes(b->bytes), b->addr));
      f.stack = frames_of(ctx.trace, a.stack);
      f.notes.push_back({"the device allocation was made here", {}, frames_of(ctx.trace, b->stack)});
      out.push_back(std::move(f));
      break;
    }
  }
}

}  // namespace gpudiag
