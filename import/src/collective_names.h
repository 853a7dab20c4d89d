// How collectives are named by each source (PyTorch's c10d ops and
// record_param_comms, gloo's and NCCL's annotations, NCCL's NVTX ranges and
// kernels), decoded into one spelling that every importer uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpudiag::import {

// The one spelling of a collective: "all_reduce", "all_gather",
// "reduce_scatter", "broadcast", "reduce", "all_to_all", "barrier", "send",
// "recv", "gather", "scatter", and "send_recv" for NCCL's SendRecv kernel,
// which runs sends, receives or both and does not say which. Accepts
// "allreduce", "c10d::allreduce_", "c10d::_allgather_base_",
// "gloo:all_reduce", "nccl:_all_gather_base", "ncclAllReduce", "AllReduce",
// "reduce_scatter_tensor_coalesced", ... "" for what is no collective
// ("wait", "init", "coalesced", "ncclGroupStart").
std::string_view collective_op(std::string_view name);

// The collective an NCCL kernel runs, from its name in any NCCL generation:
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
// (2.19 on), "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)",
// "ncclAllReduceRingLLKernel_sum_f32(ncclColl)" (before 2.9), or mangled as
// a launch call names it. nullopt for a
// kernel that is not NCCL's; "" for one whose name does not say the
// collective (ncclDevKernel_Generic, which runs a group of different ones).
std::optional<std::string_view> nccl_kernel_op(std::string_view kernel_name);

// Bytes of one element of a PyTorch dtype as the profiler names it:
// record_param_comms' "Float", "BFloat16", "Long", ... and record_shapes'
// C++ names "float", "c10::Half", "long int", "unsigned char", ... 0 when unknown.
std::uint64_t dtype_bytes(std::string_view dtype);

// elements x dtype_bytes(dtype); 0 when either is unknown, not positive, or
// the product does not fit.
std::uint64_t element_bytes(double elements, std::string_view dtype);

}  // namespace gpudiag::import
