// Which CUPTI callbacks the injection library subscribes to, and what kind
// of call each id is. Names come from CUPTI's own table
// (cuptiGetCallbackName), which answers without a driver; the choice of ids
// from names is pure, so that it is tested.
#pragma once

#include <cupti.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpudiag/api_kinds.h"

namespace gpudiag::cupti {

// The name of every callback id of a domain (runtime or driver API), by id;
// "" for ids CUPTI does not name.
std::vector<std::string> callback_names(CUpti_CallbackDomain domain);
// The ApiKind of every callback id of a domain, by id.
std::vector<ApiKind> callback_kinds(CUpti_CallbackDomain domain);
std::vector<ApiKind> kinds_of(const std::vector<std::string>& names);

// GPUDIAG_TRACE_API_CALLBACKS: which runtime API calls CUPTI reports.
// All (the default): every one, so that any failure is seen (GD006).
// Deny: every one but the hot getters no detector reads (deny_listed):
//   their failures are no longer seen.
// Analysed: only the calls a detector reads and those the copy guard needs:
//   no failure of any other call is seen.
// Off: no runtime or driver API call at all (allocations, copies and
//   launches go unrecorded): only to measure what CUPTI's dispatch costs.
enum class CallbackMode { All, Deny, Analysed, Off };
// "" is All; nullopt for a value that is none of all, deny, analysed, off.
std::optional<CallbackMode> callback_mode(std::string_view text);

// Runtime calls a program makes several times per launch whose failure no
// detector needs (PyTorch: ~5 cudaGetDevice per launch): by name, any version.
bool deny_listed(std::string_view runtime_name);

struct CallbackSet {
  bool runtime_domain = false;            // the whole runtime domain (cuptiEnableDomain)
  std::vector<CUpti_CallbackId> runtime;  // else these runtime ids
  std::vector<CUpti_CallbackId> driver;
};
// `guard`: whether the copy guard is on (it needs calls no detector reads).
CallbackSet callback_set(const std::vector<std::string>& runtime_names, const std::vector<std::string>& driver_names,
                         CallbackMode mode, bool guard);

}  // namespace gpudiag::cupti
