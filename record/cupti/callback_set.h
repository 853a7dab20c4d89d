// Which CUPTI callbacks the injection library subscribes to, and what kind
// of call each id is. The names come from CUPTI's own table
// (cuptiGetCallbackName), which answers without a driver.
#pragma once

#include <cupti.h>

#include <vector>

#include "gpudiag/api_kinds.h"

namespace gpudiag::cupti {

// The ApiKind of every callback id of a domain (runtime or driver API), by id.
std::vector<ApiKind> callback_kinds(CUpti_CallbackDomain domain);

}  // namespace gpudiag::cupti
