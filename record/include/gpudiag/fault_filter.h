// Internal to gpudiag (not installed): how the CUPTI injection library's copy
// guard (record/cupti/copy_guard.h) takes the SIGSEGV faults it causes before
// the recorder's crash handler treats them as fatal, and how it records them.
#pragma once

#include <signal.h>

#include <cstdint>

namespace gpudiag::rec {

// Offered every SIGSEGV first, from the signal handler: returns true when it
// resolved the fault (the faulting instruction is then retried), false to
// let the crash handling go on as without it. Must be async-signal-safe.
using FaultFilter = bool (*)(const siginfo_t* info, void* context) noexcept;

// Installs (nullptr: removes) the filter; atomic. Only effective while the
// recorder's handlers are installed (a recording has started).
void set_fault_filter(FaultFilter filter) noexcept;

// Whether a SIGSEGV raised now would reach the filter: recording, and the
// recorder's handler is still the process's SIGSEGV handler (a program that
// installs its own afterwards takes its faults away). One sigaction(2) call.
bool fault_filter_reachable() noexcept;

// A host access that hit the destination of an asynchronous copy before a
// synchronisation covered it, as the copy guard saw it from its fault.
struct GuardedAccessRecord {
  std::uint64_t address = 0;           // the fault address
  std::uint64_t copy_correlation = 0;  // the correlation id of the copy's API call
  bool write = false;
  bool access_known = true;  // false: the architecture does not tell a read from a write (reported as a read)
};

// Writes a GuardedAccess chunk: the record, the time, the thread and the
// stack from the faulting instruction (`context` is the handler's ucontext).
// Async-signal-safe: one write(2), nothing allocated, no lock taken.
void record_guarded_access(const GuardedAccessRecord& access, const void* context) noexcept;

// For a runtime with its own handler for faults that are fatal by design
// (gdrt's emu device faults on host access to device memory): records the
// fault as the recorder's own handler does when the default action follows
// (a Crash chunk: signal, address, the stack from the faulting instruction)
// and drains every buffer. A fault is recorded once: the recorder's handler,
// if it runs later in the chain, adds nothing. Async-signal-safe; does
// nothing when not recording.
void record_fatal_fault(int sig, const siginfo_t* info, const void* context) noexcept;

}  // namespace gpudiag::rec
