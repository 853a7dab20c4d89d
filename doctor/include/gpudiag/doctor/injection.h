// gpudiag's CUPTI injection library (libgpudiag_cupti.so): where it is, and
// whether the CUDA driver will be able to load it. The driver dlopen()s it
// from CUDA_INJECTION64_PATH and ignores a failure silently, so `gpudiag
// trace` and `gpudiag doctor` check first and say why.
#pragma once

#include <string>

#include "gpudiag/doctor/probe.h"

namespace gpudiag::doctor {

// $GPUDIAG_CUPTI_LIBRARY, else next to the running executable's lib directory
// once installed, else the build tree's; "" if none exists.
std::string find_injection_library();

// Loads `path` as the driver does (dlopen, RTLD_NOW | RTLD_LOCAL) in a child
// process, so that a failing constructor cannot harm the caller, and finds
// InitializeInjection. `loaded` false: load_error holds the loader's message.
LibraryInfo check_injection_library(const std::string& path);

}  // namespace gpudiag::doctor
