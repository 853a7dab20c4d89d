// Helpers for the detectors that read kernel launches, their arguments and
// the errors a faulting kernel leaves behind.
#include <fmt/format.h>

#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/explain/knowledge.h"

namespace gpudiag {

Launches::Launches(const Trace& trace) : trace_(trace) {
  for (std::uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ApiCall& a = trace.api_calls[i];
    if (a.correlation != 0 && trace.is_launch(a)) calls_.try_emplace(a.correlation, i);
  }
  for (std::uint32_t i = 0; i < trace.kernels.size(); ++i)
    if (trace.kernels[i].correlation != 0) kernels_.try_emplace(trace.kernels[i].correlation, i);
}

const ApiCall* Launches::call(std::uint64_t correlation) const {
  const auto it = calls_.find(correlation);
  return it == calls_.end() ? nullptr : &trace_.api_calls[it->second];
}

const Kernel* Launches::kernel(std::uint64_t correlation) const {
  const auto it = kernels_.find(correlation);
  return it == kernels_.end() ? nullptr : &trace_.kernels[it->second];
}

std::string Launches::kernel_name(std::uint64_t correlation) const {
  if (const ApiCall* c = call(correlation)) return kernel_name(*c);
  if (const Kernel* k = kernel(correlation); k && k->name != 0) return std::string(trace_.str(k->name));
  return "a kernel";
}

// The kernel's record names it demangled; the launch callback's symbol may
// be mangled, and a faulting kernel's record may never arrive.
std::string Launches::kernel_name(const ApiCall& launch) const {
  if (const Kernel* k = kernel(launch.correlation); k && k->name != 0) return std::string(trace_.str(k->name));
  if (launch.symbol != 0) return demangle(trace_.str(launch.symbol));
  return "a kernel";
}

StackId Launches::stack(const KernelArg& arg) const {
  if (arg.stack != kNoStack) return arg.stack;
  const ApiCall* c = call(arg.correlation);
  return c ? c->stack : kNoStack;
}

const Block* block_holding(const MemoryTimeline& memory, std::uint64_t addr, std::uint64_t t) {
  for (const DeviceMemory& m : memory.devices)
    if (const Block* b = block_containing(m, addr, t)) return b;
  return nullptr;
}

bool is_pageable_argument(const MemoryTimeline& memory, const KernelArg& arg) {
  if (arg.memory != MemKind::Pageable) return false;
  const Block* b = block_holding(memory, arg.value, arg.time_ns);
  return b == nullptr || b->kind == MemKind::Pageable;
}

bool is_kernel_error(std::int32_t status) {
  const explain::ErrorEntry* e = explain::find_cuda_runtime_error(status);
  return e != nullptr && e->sticky;
}

std::string cuda_error_text(std::int32_t status) {
  const explain::ErrorEntry* e = explain::find_cuda_runtime_error(status);
  return e != nullptr && !e->message.empty() ? fmt::format("{} \"{}\"", status, e->message) : std::to_string(status);
}

bool reports_earlier_error(std::string_view api_name) {
  return api_name.starts_with("cudaGetLastError") || api_name.starts_with("cudaPeekAtLastError");
}

bool is_successful_synchronize(const Trace& trace, const ApiCall& call) {
  const std::string_view name = trace.str(call.name);
  return call.status == 0 && api_kind(name) == ApiKind::Sync && name.find("Synchronize") != std::string_view::npos;
}

const ApiCall* kernel_error_after(const Trace& trace, std::uint64_t time) {
  const ApiCall* first = nullptr;
  for (const ApiCall& a : trace.api_calls)
    if (a.start_ns > time && is_kernel_error(a.status) && (!first || a.start_ns < first->start_ns))
      first = &a;
  if (!first) return nullptr;
  for (const ApiCall& a : trace.api_calls)
    if (a.start_ns > time && a.start_ns < first->start_ns && is_successful_synchronize(trace, a)) return nullptr;
  return first;
}

}  // namespace gpudiag
