// The host touched emu device memory: on a GPU that is a segmentation fault
// (a cudaMalloc pointer dereferenced on the host), and so it is here. The
// SIGSEGV handler names the rule (GD001), the allocation and the stack that
// made it, records the fault in the trace being recorded, and then lets the
// program die of it as on a GPU, after any handler installed before it.
#pragma once

namespace gdrt::emu {

class DeviceMemory;

// Starts reporting faults in `memory`'s host view (`name`: "emu:0"). Both
// must outlive the process's use of them (emu backends are never destroyed).
void report_host_faults(const DeviceMemory& memory, const char* name);

}  // namespace gdrt::emu
