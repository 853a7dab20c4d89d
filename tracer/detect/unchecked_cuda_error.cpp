// GD006 unchecked-cuda-error at run time: API calls that returned an error.
// The program went on, so whatever it did next worked on a failed call.
// An allocation that ran out of memory is GD008's. An error a kernel raised
// (700 illegal address, 719 launch failure and their kind) surfaces in a
// later call and in every call after it: it is reported once, at the first
// call that returned it, with the kernels launched before it, since the
// culprit is one of them.
#include <map>

#include <fmt/format.h>

#include "gpudiag/api_kinds.h"
#include "gpudiag/detect/detect.h"
#include "gpudiag/explain/knowledge.h"

namespace gpudiag {
namespace {

// cudaGetLastError and cudaPeekAtLastError return an earlier call's error:
// calling them is the check this rule asks for.
bool reports_earlier_error(std::string_view name) {
  return name.starts_with("cudaGetLastError") || name.starts_with("cudaPeekAtLastError");
}

bool is_sticky(std::int32_t status) {
  const explain::ErrorEntry* e = explain::find_cuda_runtime_error(status);
  return e != nullptr && e->sticky;
}

std::string error_text(std::int32_t status) {
  const explain::ErrorEntry* e = explain::find_cuda_runtime_error(status);
  return e != nullptr && !e->message.empty() ? fmt::format("{} \"{}\"", status, e->message) : std::to_string(status);
}

// The kernel a launch call launched: its own record's name, or the one the
// launch callback saw (a faulting kernel's record may never arrive).
std::string_view launched_kernel(const Trace& t, const ApiCall& launch) {
  if (launch.symbol != 0) return t.str(launch.symbol);
  for (const Kernel& k : t.kernels)
    if (launch.correlation != 0 && k.correlation == launch.correlation) return t.str(k.name);
  return "a kernel";
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
    const ApiKind kind = api_kind(t.str(a.name));
    if (kind == ApiKind::Sync && a.status == 0 && t.str(a.name).find("Synchronize") != std::string_view::npos) break;
    if (kind == ApiKind::Launch && a.status == 0) suspects.push_back(&a);
  }
  std::string names;
  for (std::size_t i = 0; i < suspects.size() && i < ctx.options.max_groups; ++i)
    names += fmt::format("{}{}", i ? ", " : "", launched_kernel(t, *suspects[i]));
  if (suspects.size() > ctx.options.max_groups) names += fmt::format(" and {} more", suspects.size() - ctx.options.max_groups);
  std::string msg = fmt::format(
      "{} returned error {}: a kernel launched earlier raised it, and this is the first call that reported it{}",
      t.str(failed.name), error_text(failed.status),
      later ? fmt::format(" ({} later call{} returned it too: the context is unusable)", later, later == 1 ? "" : "s") : "");
  msg += suspects.empty() ? "; no launch was recorded since the last successful synchronisation"
                          : fmt::format("; launched since the last successful synchronisation, newest first: {}", names);
  msg += fmt::format(". Check the status of every launch (cudaGetLastError) and synchronise while debugging, or run "
                     "it under compute-sanitizer or CUDA_LAUNCH_BLOCKING=1 to stop at the faulting kernel. `gpudiag "
                     "explain {}` tells what it means",
                     failed.status);
  Finding f = make_finding("GD006", std::move(msg));
  f.stack = frames_of(t, failed.stack);
  for (std::size_t i = 0; i < suspects.size() && i < ctx.options.max_groups; ++i)
    f.notes.push_back({fmt::format("{} was launched here", launched_kernel(t, *suspects[i])), {}, frames_of(t, suspects[i]->stack)});
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
  std::map<std::int32_t, std::size_t> kernel_errors;  // status -> first call that returned it
  for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
    const ApiCall& a = t.api_calls[i];
    if (a.status == 0 || a.status == kCudaNotReady || reports_earlier_error(t.str(a.name))) continue;
    if (a.status == kCudaOutOfMemory && is_allocation_call(t.str(a.name))) continue;  // GD008
    if (is_sticky(a.status)) {
      kernel_errors.try_emplace(a.status, i);
      continue;
    }
    auto [it, fresh] = groups.try_emplace({a.name, a.status});
    if (fresh) it->second.first = i;
    ++it->second.count;
  }
  for (const auto& [status, first] : kernel_errors) report_kernel_error(ctx, first, out);
  for (const auto& [key, g] : groups) {
    const ApiCall& a = t.api_calls[g.first];
    Finding f = make_finding(
        "GD006", fmt::format("{} returned error {} ({} call{}, {}); check the status of every CUDA call (and "
                             "cudaGetLastError after launches): later calls may fail with a stale error or work on "
                             "garbage. `gpudiag explain {}` tells what it means",
                             t.str(a.name), error_text(a.status), g.count, g.count == 1 ? "" : "s",
                             to_string(a.domain), a.status));
    f.stack = frames_of(t, a.stack);
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
