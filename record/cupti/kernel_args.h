// The parameters of a kernel launch that hold pointers, read from the launch
// call's parameters as CUPTI hands them to a callback, and what each value
// points into. Pure: the driver is reached only through the functions the
// caller passes, so that tests drive it with structs and fakes.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <vector>

#include "gpudiag/event_types.h"

namespace gpudiag::cupti {

// What a driver launch launched and with which arguments. A runtime launch
// names only its host stub: the driver launch inside it names the kernel.
struct Launch {
  CUfunction function = nullptr;
  void** args = nullptr;   // one pointer to each argument's value
  void** extra = nullptr;  // or CU_LAUNCH_PARAM_BUFFER_POINTER, a packed buffer
  CUstream stream = nullptr;
  bool per_thread_stream = false;  // a _ptsz call: stream 0 is the per-thread stream
  bool is_launch() const { return function != nullptr; }
};

// The launch a driver callback's parameters describe: cuLaunchKernel(Ex) and
// their per-thread-stream twins; nothing for other calls (graph launches
// carry no arguments) or runtime calls.
Launch launch_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params);

// A parameter of the kernel that may hold pointers, by position and byte
// offset: one of pointer size, or a small aggregate read as 8-byte words (an
// array of pointers: PyTorch's elementwise kernels take their operands so).
struct Param {
  std::uint32_t index = 0;
  std::uint32_t offset = 0;
  std::uint32_t words = 1;
  bool aggregate = false;  // its words are pointers only where the driver knows the memory
};

// The largest aggregate read, in 8-byte words: larger ones (PyTorch's offset
// calculators, reduction configurations) hold sizes and strides.
inline constexpr std::uint32_t kMaxAggregateWords = 8;

// cuFuncGetParamInfo's and cuKernelGetParamInfo's signatures.
using ParamInfoFn = CUresult (*)(CUfunction, std::size_t, std::size_t*, std::size_t*);
using KernelParamInfoFn = CUresult (*)(CUkernel, std::size_t, std::size_t*, std::size_t*);
// The kernel's parameters that may hold pointers, in order. A launch's
// function may be a CUkernel in disguise: the CUDA runtime loads its kernels
// as context-independent CUkernels and launches them cast to CUfunction,
// which cuFuncGetParamInfo refuses; then cuKernelGetParamInfo answers.
std::vector<Param> pointer_params(CUfunction function, ParamInfoFn param_info,
                                  KernelParamInfoFn kernel_param_info = nullptr);

// Word `word` (8 bytes) of a parameter, from the argument array or the packed
// buffer; false when the launch gave neither.
bool param_value(const Launch& launch, const Param& p, std::uint32_t word, std::uint64_t& value);

// What the driver says of an address: its memory type, or nothing.
enum class DriverMemory : std::uint8_t { NotKnown, Device, Host, Managed };
using PointerQueryFn = DriverMemory (*)(std::uint64_t address);

// What a value passed to a kernel points into: memory the driver knows
// (Device, Pinned, Managed), host memory it does not (Pageable: malloc or the
// stack, which a kernel cannot reach), or nothing (Unknown: a number).
MemKind memory_of(std::uint64_t value, PointerQueryFn driver);
// Only what the driver knows (Device, Pinned, Managed), else Unknown.
MemKind driver_memory_of(std::uint64_t value, PointerQueryFn driver);

// Small values and non-canonical ones are numbers, not user-space addresses.
bool user_address(std::uint64_t value);

// Whether the host has the page of `address` mapped (mincore).
bool host_mapped(std::uint64_t address);

}  // namespace gpudiag::cupti
