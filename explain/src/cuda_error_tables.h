// The CUDA runtime table is written in parts (one file per kind of error);
// knowledge.cpp merges them into one table ordered by code.
#pragma once

#include <span>

#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain::detail {

std::span<const ErrorEntry> cuda_kernel_errors();     // launch and in-kernel faults
std::span<const ErrorEntry> cuda_setup_errors();      // driver, devices, kernel images
std::span<const ErrorEntry> cuda_api_errors();        // memory and API usage
std::span<const ErrorEntry> cuda_reference_errors();  // name, number and text only

}  // namespace gpudiag::explain::detail
