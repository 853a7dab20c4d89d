// Every source's names of collectives come to one spelling; NCCL's kernel
// names of each generation say their collective; dtypes say their size.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "collective_names.h"

namespace gpudiag::import {
namespace {

TEST(CollectiveNames, EverySourcesSpellingIsOne) {
  const std::pair<const char*, const char*> cases[] = {
      {"allreduce", "all_reduce"},                          // record_param_comms' "Collective name"
      {"c10d::allreduce_", "all_reduce"},                   // the c10d op
      {"gloo:all_reduce", "all_reduce"},                    // gloo's worker
      {"nccl:all_reduce", "all_reduce"},                    // ProcessGroupNCCL's annotation
      {"ncclAllReduce", "all_reduce"},                      // NCCL's NVTX range
      {"AllReduce", "all_reduce"},                          // the word in an NCCL kernel's name
      {"allreduce_coalesced", "all_reduce"},
      {"c10d::_allgather_base_", "all_gather"},
      {"nccl:_all_gather_base", "all_gather"},
      {"all_gather_into_tensor_coalesced", "all_gather"},
      {"_c10d_functional::all_gather_into_tensor", "all_gather"},
      {"c10d::_reduce_scatter_base_", "reduce_scatter"},
      {"reduce_scatter_tensor_coalesced", "reduce_scatter"},
      {"ncclReduceScatter", "reduce_scatter"},
      {"c10d::broadcast_", "broadcast"},
      {"ncclBcast", "broadcast"},
      {"c10d::reduce_", "reduce"},
      {"c10d::alltoall_base_", "all_to_all"},
      {"nccl:all_to_all", "all_to_all"},
      {"all_to_allv", "all_to_all"},
      {"_c10d_functional::all_to_all_single", "all_to_all"},
      {"c10d::barrier", "barrier"},
      {"c10d::monitored_barrier_", "barrier"},
      {"c10d::send", "send"},
      {"ncclSend", "send"},
      {"c10d::recv_", "recv"},
      {"c10d::recv_any_source_", "recv"},
      {"gather", "gather"},
      {"c10d::scatter_", "scatter"},
      {"SendRecv", "send_recv"},
  };
  for (const auto& [name, op] : cases) EXPECT_EQ(collective_op(name), op) << name;
}

TEST(CollectiveNames, WhatIsNoCollectiveHasNoOp) {
  for (const char* name : {"", "wait", "init", "coalesced", "split", "ncclGroupStart", "ncclGroupEnd", "ncclCommInitRank",
                           "c10d::wait", "aten::add", "nccl", "base", "_"})
    EXPECT_EQ(collective_op(name), "") << name;
}

TEST(CollectiveNames, NcclKernelsOfEveryGenerationSayTheirCollective) {
  const std::pair<const char*, const char*> cases[] = {
      // NCCL 2.19 on
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_reduce"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reduce_scatter"},
      {"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "broadcast"},
      {"ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reduce"},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send_recv"},
      // 2.9 to 2.18, as in HTA's tests/data/nccl_parser_config/nccl_data.json.gz
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"},
      {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "broadcast"},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"},
      // before 2.9
      {"ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "all_reduce"},
      {"ncclReduceScatterRingLLKernel_sum_f16(ncclColl)", "reduce_scatter"},
      {"ncclReduceTreeLLKernel_sum_f32(ncclColl)", "reduce"},
      {"void ncclBroadcastRingLLKernel_copy_i8(ncclColl)", "broadcast"},
      // as a launch names them
      {"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", "all_reduce"},
      {"_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE", "send_recv"},
      {"_Z38ncclKernel_AllReduce_RING_LL_Sum_floatP11ncclDevCommmP8ncclWork", "all_reduce"},
  };
  for (const auto& [name, op] : cases) {
    const auto got = nccl_kernel_op(name);
    ASSERT_TRUE(got.has_value()) << name;
    EXPECT_EQ(*got, op) << name;
  }
  // An NCCL kernel that runs a group of different collectives names none.
  ASSERT_TRUE(nccl_kernel_op("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)").has_value());
  EXPECT_EQ(*nccl_kernel_op("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), "");
  for (const char* other : {"void gemm<float>(float*, int)", "ncclCommInitRank", "", "nccl", "Kernel_AllReduce",
                            "elementwise_kernel<ncclDevKernel_AllReduce>", "_Z4gemmPfi", "_Zgarbage"})
    EXPECT_FALSE(nccl_kernel_op(other).has_value()) << other;
}

TEST(CollectiveNames, DtypesOfRecordsAndOfShapesHaveTheirSize) {
  const std::pair<const char*, std::uint64_t> cases[] = {
      {"Float", 4}, {"Double", 8},      {"Half", 2},          {"BFloat16", 2}, {"Long", 8},
      {"Int", 4},   {"Byte", 1},        {"Char", 1},          {"Bool", 1},     {"Float8_e4m3fn", 1},
      {"float", 4}, {"c10::Half", 2},   {"c10::BFloat16", 2}, {"long int", 8}, {"unsigned char", 1},
      {"signed char", 1}, {"ComplexFloat", 8}, {"Quux", 0},   {"", 0},         {"TensorList", 0},
  };
  for (const auto& [dtype, bytes] : cases) EXPECT_EQ(dtype_bytes(dtype), bytes) << dtype;
}

TEST(CollectiveNames, ElementBytesOfGarbageAreUnsaid) {
  EXPECT_EQ(element_bytes(2049000, "Float"), 8196000u);
  EXPECT_EQ(element_bytes(3, "Quux"), 0u);
  for (double garbage : {-5.0, 0.0, 1e300, std::numeric_limits<double>::infinity(), std::nan("")})
    EXPECT_EQ(element_bytes(garbage, "Float"), 0u) << garbage;
}

}  // namespace
}  // namespace gpudiag::import
