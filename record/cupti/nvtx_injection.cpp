// NVTX loads the library NVTX_INJECTION64_PATH names (`gpudiag trace` sets
// it to this one, beside CUDA_INJECTION64_PATH) and calls its
// InitializeInjectionNvtx2. CUPTI implements that entry point: through it
// CUPTI sees the program's NVTX ranges and reports them as marker records
// (nvtx_ranges.h). This library hands the call on to the CUPTI it links, so
// one library serves both variables.
#include <cupti.h>
#include <dlfcn.h>

#include "gpudiag/record.h"

namespace {

using NvtxEntry = int (*)(void*);

NvtxEntry cupti_nvtx_entry() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || info.dli_fname == nullptr) return nullptr;
  void* cupti = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  return cupti ? reinterpret_cast<NvtxEntry>(dlsym(cupti, "InitializeInjectionNvtx2")) : nullptr;
}

}  // namespace

// Returns 0, which leaves NVTX a no-op in this process, when the process is
// not traced or this CUPTI has no NVTX entry point.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* get_export_table) {
  if (!gpudiag::rec::enabled()) return 0;
  static const NvtxEntry entry = cupti_nvtx_entry();
  return entry ? entry(get_export_table) : 0;
}
