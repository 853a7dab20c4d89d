#include "callback_set.h"

#include <algorithm>

#include "copy_guard_calls.h"

namespace gpudiag::cupti {
namespace {

// `name` is `base` or a version of it (cudaGetDevice_v3020, cudaStreamGetCaptureInfo_ptsz_v10010).
bool is_call(std::string_view name, std::string_view base) {
  return name.starts_with(base) && (name.size() == base.size() || name[base.size()] == '_');
}

bool is_any_call(std::string_view name, std::initializer_list<std::string_view> bases) {
  return std::any_of(bases.begin(), bases.end(), [&](std::string_view b) { return is_call(name, b); });
}

// Runtime calls the copy guard acts on that no detector reads
// (copy_guard_calls.cpp: GuardCalls::entered and returned).
bool guard_needs(std::string_view runtime_name) {
  return is_any_call(runtime_name, {"cudaStreamAddCallback", "cudaLaunchHostFunc", "cudaGraphLaunch", "cudaFreeHost", "cudaHostUnregister", "cudaDeviceSynchronize",
                                    "cudaThreadSynchronize", "cudaStreamWaitEvent", "cudaFree"});
}

// Runtime calls that end the device's context: its allocations and guards go.
bool ends_context(std::string_view runtime_name) { return is_any_call(runtime_name, {"cudaDeviceReset", "cudaThreadExit"}); }

}  // namespace

std::vector<std::string> callback_names(CUpti_CallbackDomain domain) {
  const CUpti_CallbackId count = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE
                                 : domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_DRIVER_TRACE_CBID_SIZE
                                                                         : 0;
  std::vector<std::string> names(count);
  for (CUpti_CallbackId id = 1; id < count; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name != nullptr) names[id] = name;
  }
  return names;
}

std::vector<ApiKind> kinds_of(const std::vector<std::string>& names) {
  std::vector<ApiKind> kinds(names.size(), ApiKind::Other);
  for (std::size_t id = 1; id < names.size(); ++id)
    if (!names[id].empty()) kinds[id] = api_kind(names[id]);
  return kinds;
}

std::vector<ApiKind> callback_kinds(CUpti_CallbackDomain domain) { return kinds_of(callback_names(domain)); }

std::optional<CallbackMode> callback_mode(std::string_view text) {
  if (text.empty() || text == "all") return CallbackMode::All;
  if (text == "deny") return CallbackMode::Deny;
  if (text == "analysed") return CallbackMode::Analysed;
  if (text == "off") return CallbackMode::Off;
  return std::nullopt;
}

bool deny_listed(std::string_view runtime_name) {
  return is_any_call(runtime_name, {"cudaGetDevice", "cudaGetErrorString", "cudaGetErrorName", "cudaFuncGetAttributes",
                                    "cudaDeviceGetAttribute", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo"});
}

CallbackSet callback_set(const std::vector<std::string>& runtime_names, const std::vector<std::string>& driver_names,
                         CallbackMode mode, bool guard) {
  CallbackSet set;
  if (mode == CallbackMode::Off) return set;
  set.runtime_domain = mode == CallbackMode::All;
  if (!set.runtime_domain)
    for (std::size_t id = 1; id < runtime_names.size(); ++id) {
      const std::string& name = runtime_names[id];
      if (name.empty()) continue;
      const bool wanted = mode == CallbackMode::Deny ? !deny_listed(name)
                                                     : api_kind(name) != ApiKind::Other || ends_context(name) ||
                                                           (guard && guard_needs(name));
      if (wanted) set.runtime.push_back(static_cast<CUpti_CallbackId>(id));
    }
  // The driver calls a detector reads, made outside any runtime call.
  for (std::size_t id = 1; id < driver_names.size(); ++id)
    if (!driver_names[id].empty() && api_kind(driver_names[id]) != ApiKind::Other)
      set.driver.push_back(static_cast<CUpti_CallbackId>(id));
  // A context's end, which takes its allocations with it (the live
  // allocations that resolve kernel arguments forget them), and the guard's calls.
  std::vector<CUpti_CallbackId> more = {CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy,
                                        CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
                                        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
                                        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
                                        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease,
                                        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2};
  if (guard) {
    const std::vector<CUpti_CallbackId> guards = guard_driver_callbacks();
    more.insert(more.end(), guards.begin(), guards.end());
  }
  for (CUpti_CallbackId id : more)
    if (std::find(set.driver.begin(), set.driver.end(), id) == set.driver.end()) set.driver.push_back(id);
  return set;
}

}  // namespace gpudiag::cupti
