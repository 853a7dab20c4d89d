#include "kernel_args.h"  // cupti.h brings the parameter structs (generated_cuda*_meta.h)

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace gpudiag::cupti {
namespace {

template <class P>
Launch driver_launch(const void* params, bool per_thread) {
  const auto& p = *static_cast<const P*>(params);
  return {.function = p.f, .args = p.kernelParams, .extra = p.extra, .stream = p.hStream, .per_thread_stream = per_thread};
}

template <class P>
Launch driver_launch_ex(const void* params, bool per_thread) {
  const auto& p = *static_cast<const P*>(params);
  return {.function = p.f, .args = p.kernelParams, .extra = p.extra,
          .stream = p.config ? p.config->hStream : nullptr, .per_thread_stream = per_thread};
}

// The packed argument buffer of a launch given `extra`, or nullptr.
const char* packed_buffer(void** extra) {
  for (void** e = extra; e != nullptr && *e != CU_LAUNCH_PARAM_END; e += 2)
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) return static_cast<const char*>(e[1]);
  return nullptr;
}

}  // namespace

Launch launch_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return {};
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: return driver_launch<cuLaunchKernel_params>(params, false);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: return driver_launch<cuLaunchKernel_ptsz_params>(params, true);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: return driver_launch_ex<cuLaunchKernelEx_params>(params, false);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return driver_launch_ex<cuLaunchKernelEx_ptsz_params>(params, true);
      default: return {};
    }
  }
  return {};
}

std::vector<Param> pointer_params(CUfunction function, ParamInfoFn param_info, KernelParamInfoFn kernel_param_info) {
  std::vector<Param> out;
  if (function == nullptr) return out;
  const auto as_function = [&](std::size_t i, std::size_t* offset, std::size_t* size) {
    return param_info != nullptr ? param_info(function, i, offset, size) : CUDA_ERROR_NOT_SUPPORTED;
  };
  const auto as_kernel = [&](std::size_t i, std::size_t* offset, std::size_t* size) {
    return kernel_param_info != nullptr ? kernel_param_info(reinterpret_cast<CUkernel>(function), i, offset, size)
                                        : CUDA_ERROR_NOT_SUPPORTED;
  };
  std::size_t offset = 0, size = 0;
  const bool is_function = as_function(0, &offset, &size) == CUDA_SUCCESS;
  if (!is_function && as_kernel(0, &offset, &size) != CUDA_SUCCESS) return out;  // no parameters, or no answer
  constexpr std::size_t kWord = sizeof(std::uint64_t);
  // A kernel has at most a few thousand parameters (32 KiB of them).
  for (std::size_t i = 0; i < 32768; ++i) {
    if (i > 0 && (is_function ? as_function(i, &offset, &size) : as_kernel(i, &offset, &size)) != CUDA_SUCCESS) break;
    const auto index = static_cast<std::uint32_t>(i), at = static_cast<std::uint32_t>(offset);
    if (size == kWord)
      out.push_back({index, at});
    else if (size > kWord && size % kWord == 0 && size / kWord <= kMaxAggregateWords)
      out.push_back({index, at, static_cast<std::uint32_t>(size / kWord), true});
  }
  return out;
}

bool param_value(const Launch& launch, const Param& p, std::uint32_t word, std::uint64_t& value) {
  const std::size_t skip = std::size_t{word} * sizeof value;
  if (launch.args != nullptr) {
    if (launch.args[p.index] == nullptr) return false;
    std::memcpy(&value, static_cast<const char*>(launch.args[p.index]) + skip, sizeof value);
    return true;
  }
  if (const char* buffer = packed_buffer(launch.extra)) {
    std::memcpy(&value, buffer + p.offset + skip, sizeof value);
    return true;
  }
  return false;
}

bool host_mapped(std::uint64_t address) {
  static const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &resident) == 0;
}

bool user_address(std::uint64_t value) {
  constexpr std::uint64_t kLowest = 1u << 16, kUserEnd = 1ull << 47;
  return value >= kLowest && value < kUserEnd;
}

MemKind driver_memory_of(std::uint64_t value, PointerQueryFn driver) {
  if (!user_address(value)) return MemKind::Unknown;
  switch (driver != nullptr ? driver(value) : DriverMemory::NotKnown) {
    case DriverMemory::Device: return MemKind::Device;
    case DriverMemory::Host: return MemKind::Pinned;
    case DriverMemory::Managed: return MemKind::Managed;
    case DriverMemory::NotKnown: break;
  }
  return MemKind::Unknown;
}

MemKind memory_of(std::uint64_t value, PointerQueryFn driver) {
  const MemKind known = driver_memory_of(value, driver);
  if (known != MemKind::Unknown || !user_address(value)) return known;
  return host_mapped(value) ? MemKind::Pageable : MemKind::Unknown;
}

}  // namespace gpudiag::cupti
