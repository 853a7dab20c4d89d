#include "callback_set.h"

namespace gpudiag::cupti {

std::vector<ApiKind> callback_kinds(CUpti_CallbackDomain domain) {
  const CUpti_CallbackId count = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE
                                 : domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_DRIVER_TRACE_CBID_SIZE
                                                                         : 0;
  std::vector<ApiKind> kinds(count, ApiKind::Other);
  for (CUpti_CallbackId id = 1; id < count; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name != nullptr) kinds[id] = api_kind(name);
  }
  return kinds;
}

}  // namespace gpudiag::cupti
