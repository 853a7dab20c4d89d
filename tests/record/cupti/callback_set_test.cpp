// Which CUPTI callbacks each GPUDIAG_TRACE_API_CALLBACKS mode subscribes to,
// from CUPTI's real table of names (it needs no driver).
#include <gtest/gtest.h>

#include <algorithm>

#include "callback_set.h"

namespace gpudiag::cupti {
namespace {

class CallbackSetTest : public ::testing::Test {
 protected:
  static bool has(const std::vector<CUpti_CallbackId>& ids, CUpti_CallbackId id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }
  CallbackSet set(CallbackMode mode, bool guard = true) const { return callback_set(runtime, driver, mode, guard); }
  const std::vector<std::string> runtime = callback_names(CUPTI_CB_DOMAIN_RUNTIME_API);
  const std::vector<std::string> driver = callback_names(CUPTI_CB_DOMAIN_DRIVER_API);
};

TEST_F(CallbackSetTest, ModesAreReadFromTheirNamesAndAnEmptyValueIsAll) {
  EXPECT_EQ(callback_mode(""), CallbackMode::All);
  EXPECT_EQ(callback_mode("all"), CallbackMode::All);
  EXPECT_EQ(callback_mode("deny"), CallbackMode::Deny);
  EXPECT_EQ(callback_mode("analysed"), CallbackMode::Analysed);
  EXPECT_EQ(callback_mode("off"), CallbackMode::Off);
  EXPECT_EQ(callback_mode("analyzed"), std::nullopt);
  EXPECT_EQ(callback_mode("ALL"), std::nullopt);
}

TEST_F(CallbackSetTest, AllIsTheWholeRuntimeDomainAndTheAnalysedDriverCalls) {
  const CallbackSet all = set(CallbackMode::All);
  EXPECT_TRUE(all.runtime_domain);
  EXPECT_TRUE(has(all.driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(has(all.driver, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
  EXPECT_FALSE(has(all.driver, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice));
  EXPECT_TRUE(has(all.driver, CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback)) << "the copy guard's";
  EXPECT_FALSE(has(set(CallbackMode::All, false).driver, CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback));
  EXPECT_TRUE(has(set(CallbackMode::All, false).driver, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2))
      << "a context's end takes its live allocations, guard or not";
}

TEST_F(CallbackSetTest, DenyLeavesOutOnlyTheHotGettersWhateverTheirVersion) {
  const CallbackSet deny = set(CallbackMode::Deny);
  EXPECT_FALSE(deny.runtime_domain);
  EXPECT_FALSE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_FALSE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020));
  EXPECT_FALSE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020));
  EXPECT_FALSE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010));
  EXPECT_FALSE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010));
  // Sticky kernel errors surface in these: kept.
  EXPECT_TRUE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
  EXPECT_TRUE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020));
  EXPECT_TRUE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020)) << "not cudaGetDevice";
  EXPECT_TRUE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020));
  EXPECT_TRUE(has(deny.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  std::size_t named = 0;
  for (std::size_t id = 1; id < runtime.size(); ++id) named += !runtime[id].empty();
  std::size_t denied = 0;
  for (std::size_t id = 1; id < runtime.size(); ++id) denied += !runtime[id].empty() && deny_listed(runtime[id]);
  EXPECT_EQ(deny.runtime.size(), named - denied);
  EXPECT_LT(denied, 20u);
  EXPECT_EQ(deny.driver, set(CallbackMode::All).driver);
}

TEST_F(CallbackSetTest, AnalysedIsTheCallsADetectorReadsAndThoseTheGuardNeeds) {
  const CallbackSet analysed = set(CallbackMode::Analysed);
  EXPECT_FALSE(analysed.runtime_domain);
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020));
  EXPECT_FALSE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
  EXPECT_FALSE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020));
  EXPECT_TRUE(has(analysed.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000)) << "the guard's";
  const CallbackSet unguarded = set(CallbackMode::Analysed, false);
  EXPECT_FALSE(has(unguarded.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000));
  EXPECT_TRUE(has(unguarded.runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020)) << "it ends the live allocations";
}

TEST_F(CallbackSetTest, OffSubscribesToNoApiCall) {
  const CallbackSet off = set(CallbackMode::Off);
  EXPECT_FALSE(off.runtime_domain);
  EXPECT_TRUE(off.runtime.empty());
  EXPECT_TRUE(off.driver.empty());
}

}  // namespace
}  // namespace gpudiag::cupti
