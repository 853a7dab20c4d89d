// GD006 unchecked-cuda-error at run time: API calls that returned an error.
// The program went on, so whatever it did next worked on a failed call.
// A launch that failed is named by its kernel: it never ran, and only
// cudaGetLastError tells, not the synchronisation after it.
// An allocation that ran out of memory is GD008's. An error a kernel raised
// (700 illegal address, 719 launch failure and their kind) surfaces in a
// later call and in every call after it: it is reported once, at the first
// call that returned it, with the kernels launched before it, since the
// culprit is one of them; one given pageable host memory is named as the
// likely cause (GD001 reports it).
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

// Of the launches suspected of an error, newest first, the first that was
// given pageable host memory, which the GPU cannot read: the likely cause,
// which GD001 reports. Empty when none was.
std::string pageable_argument_note(const DetectContext& ctx, const Launches& launches,
                                   const std::vector<const ApiCall*>& suspects) {
  std::unordered_map<std::uint64_t, const KernelArg*> pageable;  // launch correlation -> its first such argument
  for (const KernelArg& a : ctx.trace.kernel_args)
    if (a.correlation != 0 && is_pageable_argument(ctx.memory, a)) pageable.try_emplace(a.correlation, &a);
  if (pageable.empty()) return {};
  for (const ApiCall* s : suspects)
    if (const auto it = pageable.find(s->correlation); it != pageable.end())
      return fmt::format(
          "; {} was given pageable host memory as parameter {} (0x{:x}), which the GPU cannot read: "
          "the likely cause ({})",
          launches.kernel_name(*s), it->second->index, it->second->value, rule_named("device-mismatch").id);
  return {};
}

void report_kernel_error(const DetectContext& ctx, std::size_t first, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  const ApiCall& failed = t.api_calls[first];
  std::size_t later = 0;
  for (std::size_t i = first + 1; i < t.api_calls.size(); ++i) later += t.api_calls[i].status == failed.status;
  // Kernels launched since the last synchronisation that succeeded: one of
  // them raised the error (those before it had finished cleanly).
  std::vector<const ApiCall*> suspects;
  for (std::size_t i = first; i-- > 0;) {
    const ApiCall& a = t.api_calls[i];
    if (is_successful_synchronize(t, a)) break;
    if (t.is_launch(a) && a.status == 0) suspects.push_back(&a);
  }
  const Launches launches(t);
  std::string names;
  for (std::size_t i = 0; i < suspects.size() && i < ctx.options.max_groups; ++i)
    names += fmt::format("{}{}", i ? ", " : "", launches.kernel_name(*suspects[i]));
  if (suspects.size() > ctx.options.max_groups) names += fmt::format(" and {} more", suspects.size() - ctx.options.max_groups);
  std::string msg = fmt::format(
      "{} returned error {}: a kernel launched earlier raised it, and this is the first call that reported it{}",
      t.str(failed.name), cuda_error_text(failed.status),
      later ? fmt::format(" ({} later call{} returned it too: the context is unusable)", later, later == 1 ? "" : "s") : "");
  msg += suspects.empty() ? "; no launch was recorded since the last successful synchronisation"
                          : fmt::format("; launched since the last successful synchronisation, newest first: {}", names);
  msg += pageable_argument_note(ctx, launches, suspects);
  msg += fmt::format(". Check the status of every launch (cudaGetLastError) and synchronise while debugging, or run "
                     "it under compute-sanitizer or CUDA_LAUNCH_BLOCKING=1 to stop at the faulting kernel. `gpudiag "
                     "explain {}` tells what it means",
                     failed.status);
  Finding f = make_finding(ctx, std::move(msg));
  f.stack = frames_of(t, failed.stack);
  for (std::size_t i = 0; i < suspects.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} was launched here", launches.kernel_name(*suspects[i])), {},
                       frames_of(t, suspects[i]->stack)});
  out.push_back(std::move(f));
}

}  // namespace

void detect_unchecked_cuda_error(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0;
    std::size_t first = 0;
  };
  std::map<std::pair<StringId, std::int32_t>, Group> groups;
  std::map<std::pair<StringId, std::int32_t>, Group> failed_launches;  // by kernel symbol and status
  std::map<std::int32_t, std::size_t> kernel_errors;  // status -> first call that returned it
  for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
    const ApiCall& a = t.api_calls[i];
    if (a.status == 0 || a.status == kCudaNotReady || reports_earlier_error(t.str(a.name))) continue;
    if (a.status == kCudaOutOfMemory && is_allocation_call(t.str(a.name))) continue;  // GD008
    if (is_kernel_error(a.status)) {
      kernel_errors.try_emplace(a.status, i);
      continue;
    }
    const bool launch = t.is_launch(a) && a.symbol != 0;
    auto [it, fresh] = (launch ? failed_launches : groups).try_emplace({launch ? a.symbol : a.name, a.status});
    if (fresh) it->second.first = i;
    ++it->second.count;
  }
  for (const auto& [status, first] : kernel_errors) report_kernel_error(ctx, first, out);
  auto add = [&](const ApiCall& a, std::string message) {
    Finding f = make_finding(ctx, std::move(message));
    f.stack = frames_of(t, a.stack);
    out.push_back(std::move(f));
  };
  if (!failed_launches.empty()) {
    const Launches launches(t);  // indexes every launch: only when one failed
    for (const auto& [key, g] : failed_launches) {
      const ApiCall& a = t.api_calls[g.first];
      add(a, fmt::format("the launch of {} returned error {} ({} launch{}): the kernel never ran, so what it was to "
                         "write keeps its old contents. Only cudaGetLastError reports a launch that did not start; "
                         "the synchronisation after it returns success. Check cudaGetLastError after every launch. "
                         "`gpudiag explain {}` tells what it means",
                         launches.kernel_name(a), cuda_error_text(a.status), g.count, g.count == 1 ? "" : "es",
                         a.status));
    }
  }
  for (const auto& [key, g] : groups) {
    const ApiCall& a = t.api_calls[g.first];
    add(a, fmt::format("{} returned error {} ({} call{}, {}); check the status of every CUDA call (and "
                       "cudaGetLastError after launches): later calls may fail with a stale error or work on "
                       "garbage. `gpudiag explain {}` tells what it means",
                       t.str(a.name), cuda_error_text(a.status), g.count, g.count == 1 ? "" : "s",
                       to_string(a.domain), a.status));
  }
}

}  // namespace gpudiag
