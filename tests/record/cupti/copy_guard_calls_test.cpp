// Which CUDA calls guard a copy's destination and which release it, played
// with parameter structs built here (as CUPTI hands them to a callback), a
// fake driver that says what memory and streams are, and anonymous memory
// standing in for pinned memory.
#include "copy_guard_calls.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <set>
#include <vector>

namespace gpudiag::cupti {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// ---- the fake driver ----
struct FakeMemory {
  std::uint64_t lo, hi;
  CUmemorytype type;
  bool managed = false;
};
std::vector<FakeMemory> g_memory;
std::map<CUstream, unsigned> g_stream_flags;
std::set<CUstream> g_capturing;
bool g_can_guard = true;

CUresult fake_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  for (const FakeMemory& m : g_memory) {
    if (ptr < m.lo || ptr >= m.hi) continue;
    if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *static_cast<unsigned*>(data) = m.type;
    else if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) *static_cast<bool*>(data) = m.managed;  // the driver writes a bool
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;  // what the driver says of pageable memory
}

CUresult fake_stream_flags(CUstream stream, unsigned* flags) {
  auto it = g_stream_flags.find(stream);
  if (it == g_stream_flags.end()) return CUDA_ERROR_INVALID_HANDLE;
  *flags = it->second;
  return CUDA_SUCCESS;
}

CUresult fake_capturing(CUstream stream, CUstreamCaptureStatus* status) {
  *status = g_capturing.count(stream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

void no_sink(const rec::GuardedAccessRecord&, const void*) noexcept {}

const auto kNonBlocking = reinterpret_cast<cudaStream_t>(0x5100);
const auto kOtherNonBlocking = reinterpret_cast<cudaStream_t>(0x5200);
const auto kBlocking = reinterpret_cast<cudaStream_t>(0x5300);
const auto kEvent = reinterpret_cast<cudaEvent_t>(0xe100);
const auto kDevice = reinterpret_cast<void*>(0x7d0000000000);
constexpr std::int32_t kNotReady = 600;
constexpr auto R = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto D = CUPTI_CB_DOMAIN_DRIVER_API;

class GuardCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* m = mmap(nullptr, 8 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    pinned = static_cast<char*>(m);
    pageable.resize(4 * kPage);
    g_memory = {{address(pinned), address(pinned) + 6 * kPage, CU_MEMORYTYPE_HOST},
                {address(pinned) + 6 * kPage, address(pinned) + 8 * kPage, CU_MEMORYTYPE_HOST, true},  // managed
                {address(kDevice), address(kDevice) + (1u << 30), CU_MEMORYTYPE_DEVICE}};
    g_stream_flags = {{reinterpret_cast<CUstream>(kNonBlocking), CU_STREAM_NON_BLOCKING},
                      {reinterpret_cast<CUstream>(kOtherNonBlocking), CU_STREAM_NON_BLOCKING},
                      {reinterpret_cast<CUstream>(kBlocking), CU_STREAM_DEFAULT}};
    g_capturing.clear();
    g_can_guard = true;
  }
  void TearDown() override {
    guard.release_all();
    munmap(pinned, 8 * kPage);
  }
  static std::uint64_t address(const void* p) { return reinterpret_cast<std::uint64_t>(p); }
  bool guarded(std::size_t page = 0) const { return !test::host_readable(pinned + page * kPage); }

  // cudaMemcpyAsync(pinned + page, device, pages, kind, stream) as it returns.
  void copy_async(cudaStream_t stream, std::size_t page = 0, cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                  std::int32_t status = 0, bool per_thread = false) {
    cudaMemcpyAsync_v3020_params p{pinned + page * kPage, kDevice, kPage, kind, stream};
    calls.returned(R, per_thread ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                   &p, status, ++correlation);
  }
  void stream_sync(cudaStream_t stream, bool per_thread = false) {
    cudaStreamSynchronize_v3020_params p{stream};
    calls.returned(R, per_thread ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000
                                 : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                   &p, 0, ++correlation);
  }

  char* pinned = nullptr;
  std::vector<char> pageable;
  CopyGuard guard{no_sink};
  GuardCalls calls{guard, GuardProbes{fake_attribute, fake_stream_flags, fake_capturing}, []() noexcept { return g_can_guard; }};
  std::uint64_t correlation = 0;
};

TEST_F(GuardCallsTest, AnAsyncDeviceToHostCopyIntoPinnedMemoryIsGuardedUntilItsStreamIsSynchronised) {
  copy_async(kNonBlocking);
  EXPECT_TRUE(guarded());
  stream_sync(kOtherNonBlocking);
  EXPECT_TRUE(guarded()) << "another stream's sync";
  stream_sync(kNonBlocking);
  EXPECT_FALSE(guarded());
  // The default direction, found from the pointers, is guarded too.
  copy_async(kNonBlocking, 0, cudaMemcpyDefault);
  EXPECT_TRUE(guarded());
}

TEST_F(GuardCallsTest, OnlyDeviceToHostCopiesIntoPinnedMemoryThatSucceededOutsideAGraphCaptureAreGuarded) {
  copy_async(kNonBlocking, 0, cudaMemcpyHostToDevice);
  EXPECT_FALSE(guarded()) << "host to device";
  copy_async(kNonBlocking, 0, cudaMemcpyDeviceToHost, /*status=*/1);
  EXPECT_FALSE(guarded()) << "a failed call";
  copy_async(kNonBlocking, 6);
  EXPECT_FALSE(guarded(6)) << "managed memory";
  cudaMemcpyAsync_v3020_params from_host{pinned, pinned + 2 * kPage, kPage, cudaMemcpyDefault, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &from_host, 0, 1);
  EXPECT_FALSE(guarded()) << "host to host";
  g_capturing.insert(reinterpret_cast<CUstream>(kNonBlocking));
  copy_async(kNonBlocking);
  EXPECT_FALSE(guarded()) << "captured into a graph: it runs when the graph does";
  g_capturing.clear();
  g_can_guard = false;
  copy_async(kNonBlocking);
  EXPECT_FALSE(guarded()) << "a fault would not reach the guard";
  EXPECT_EQ(guard.pending(), 0u);
}

TEST_F(GuardCallsTest, AnEventSyncOrACompletedQueryReleasesTheCopiesBeforeTheEventsRecord) {
  copy_async(kNonBlocking, 0);
  cudaEventRecord_v3020_params record{kEvent, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &record, 0, ++correlation);
  copy_async(kNonBlocking, 1);
  cudaEventQuery_v3020_params query{kEvent};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, &query, kNotReady, ++correlation);
  EXPECT_TRUE(guarded(0)) << "not ready yet";
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, &query, 0, ++correlation);
  EXPECT_FALSE(guarded(0));
  EXPECT_TRUE(guarded(1)) << "copied after the event was recorded";
  cudaEventRecordWithFlags_v11010_params again{kEvent, kNonBlocking, 0};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010, &again, 0, ++correlation);
  cudaEventSynchronize_v3020_params sync{kEvent};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, &sync, 0, ++correlation);
  EXPECT_FALSE(guarded(1));
}

TEST_F(GuardCallsTest, AStreamQueryReleasesOnlyWhenItReportsCompletion) {
  copy_async(kNonBlocking);
  cudaStreamQuery_v3020_params q{kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, &q, kNotReady, ++correlation);
  EXPECT_TRUE(guarded());
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, &q, 0, ++correlation);
  EXPECT_FALSE(guarded());
}

TEST_F(GuardCallsTest, AStreamThatWaitedForTheEventCoversTheCopy) {
  copy_async(kNonBlocking);
  cudaEventRecord_v3020_params record{kEvent, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &record, 0, ++correlation);
  cudaStreamWaitEvent_v3020_params wait{kOtherNonBlocking, kEvent, 0};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, &wait, 0, ++correlation);
  stream_sync(kOtherNonBlocking);
  EXPECT_FALSE(guarded());
}

TEST_F(GuardCallsTest, DeviceSyncsAndFreesOfDeviceMemoryReleaseEverything) {
  const std::pair<CUpti_CallbackDomain, CUpti_CallbackId> everything[] = {
      {R, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020}, {R, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020},
      {R, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020},              {D, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize},
      {D, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2}};
  for (const auto& [domain, cbid] : everything) {
    copy_async(kNonBlocking, 0);
    copy_async(kBlocking, 1);
    const std::uint64_t params[4] = {};
    // CUPTI passes no parameter struct to a call that takes no parameters.
    const bool parameterless = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ||
                               cbid == CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020 ||
                               (domain == D && cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize);
    calls.returned(domain, cbid, parameterless ? nullptr : params, 0, ++correlation);
    EXPECT_FALSE(guarded(0)) << cbid;
    EXPECT_FALSE(guarded(1)) << cbid;
  }
}

TEST_F(GuardCallsTest, PinnedMemoryIsReleasedBeforeItIsFreedOrUnregistered) {
  const std::pair<CUpti_CallbackDomain, CUpti_CallbackId> frees[] = {
      {R, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020}, {R, CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000},
      {D, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost},       {D, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister},
      {R, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020}, {D, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2},
      {D, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap},          {D, CUPTI_DRIVER_TRACE_CBID_cuMemRelease},
      {D, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree}};
  for (const auto& [domain, cbid] : frees) {
    copy_async(kNonBlocking);
    void* params[1] = {pinned};
    const bool parameterless = domain == R && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020;
    // on entry: before the memory goes
    calls.entered(domain, cbid, ApiKind::Memory, "free", parameterless ? nullptr : params);
    EXPECT_FALSE(guarded()) << cbid;
  }
}

TEST_F(GuardCallsTest, ASynchronousCopyReleasesWhatTheLegacyDefaultStreamOrdersBeforeItStarts) {
  copy_async(kBlocking, 0);
  copy_async(kNonBlocking, 1);
  cudaMemcpy_v3020_params p{pageable.data(), kDevice, 64, cudaMemcpyDeviceToHost};
  calls.entered(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, ApiKind::Copy, "cudaMemcpy", &p);
  EXPECT_FALSE(guarded(0)) << "a blocking stream: ordered before the legacy default stream's copy";
  EXPECT_TRUE(guarded(1)) << "a non-blocking stream is not";
  calls.entered(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, ApiKind::Copy, "cudaMemcpyAsync", &p);
  EXPECT_TRUE(guarded(1)) << "an asynchronous copy does not wait";
}

TEST_F(GuardCallsTest, TheDefaultStreamsAreTheLegacyOneOrTheThreadsOwn) {
  EXPECT_EQ(GuardCalls::stream_key(nullptr, false), kLegacyStream);
  EXPECT_EQ(GuardCalls::stream_key(cudaStreamLegacy, true), kLegacyStream);
  EXPECT_EQ(GuardCalls::stream_key(nullptr, true), GuardCalls::stream_key(cudaStreamPerThread, false));
  EXPECT_NE(GuardCalls::stream_key(nullptr, true) & kPerThreadStreamTag, 0u);
  EXPECT_EQ(GuardCalls::stream_key(kNonBlocking, true), reinterpret_cast<std::uint64_t>(kNonBlocking));
  // A copy on the per-thread default stream (stream 0 of a _ptsz call): the
  // legacy default stream's sync covers it (the per-thread stream is blocking).
  copy_async(nullptr, 0, cudaMemcpyDeviceToHost, 0, /*per_thread=*/true);
  stream_sync(kNonBlocking);
  EXPECT_TRUE(guarded());
  stream_sync(nullptr);
  EXPECT_FALSE(guarded());
  copy_async(nullptr, 0, cudaMemcpyDeviceToHost, 0, true);
  stream_sync(cudaStreamPerThread);
  EXPECT_FALSE(guarded());
}

TEST_F(GuardCallsTest, A2DCopyIsGuardedOnlyIntoAContiguousDestination) {
  cudaMemcpy2DAsync_v3020_params pitched{pinned, 2 * kPage, kDevice, kPage, kPage, 2, cudaMemcpyDeviceToHost, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, &pitched, 0, ++correlation);
  EXPECT_FALSE(guarded(0)) << "the gaps between the rows are not the copy's";
  cudaMemcpy2DAsync_v3020_params packed{pinned, kPage, kDevice, kPage, kPage, 2, cudaMemcpyDeviceToHost, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, &packed, 0, ++correlation);
  EXPECT_TRUE(guarded(0));
  EXPECT_TRUE(guarded(1));
}

TEST_F(GuardCallsTest, DriverCallsGuardAndReleaseAsTheRuntimesDo) {
  cuMemcpyDtoHAsync_v2_params copy{pinned, reinterpret_cast<CUdeviceptr>(kDevice), kPage,
                                   reinterpret_cast<CUstream>(kNonBlocking)};
  calls.returned(D, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, &copy, 0, ++correlation);
  EXPECT_TRUE(guarded());
  cuStreamSynchronize_params sync{reinterpret_cast<CUstream>(kNonBlocking)};
  calls.returned(D, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &sync, 0, ++correlation);
  EXPECT_FALSE(guarded());
  cuMemcpyAsync_params unified{reinterpret_cast<CUdeviceptr>(pinned), reinterpret_cast<CUdeviceptr>(kDevice), kPage,
                               reinterpret_cast<CUstream>(kNonBlocking)};
  calls.returned(D, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &unified, 0, ++correlation);
  EXPECT_TRUE(guarded());
  cuEventRecord_params record{reinterpret_cast<CUevent>(kEvent), reinterpret_cast<CUstream>(kNonBlocking)};
  calls.returned(D, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &record, 0, ++correlation);
  cuEventSynchronize_params wait{reinterpret_cast<CUevent>(kEvent)};
  calls.returned(D, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &wait, 0, ++correlation);
  EXPECT_FALSE(guarded());
}

TEST_F(GuardCallsTest, ACopyIntoPageableMemoryReturnsDoneAndSoReleasesItsStream) {
  copy_async(kNonBlocking);
  cudaMemcpyAsync_v3020_params p{pageable.data(), kDevice, 64, cudaMemcpyDeviceToHost, kNonBlocking};
  calls.returned(R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &p, 0, ++correlation);
  EXPECT_FALSE(guarded());
}

TEST_F(GuardCallsTest, WorkThatMayReadTheBufferInStreamOrderReleasesTheStreamBeforeItIsEnqueued) {
  copy_async(kNonBlocking);
  cudaLaunchHostFunc_v10000_params host_fn{kNonBlocking, nullptr, nullptr};
  calls.entered(R, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, ApiKind::Launch, "cudaLaunchHostFunc", &host_fn);
  EXPECT_FALSE(guarded()) << "a host function reads it after the copy, in stream order";
  copy_async(kNonBlocking);
  cudaGraphLaunch_v10000_params graph{nullptr, kNonBlocking};
  calls.entered(R, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, ApiKind::Launch, "cudaGraphLaunch", &graph);
  EXPECT_FALSE(guarded());
  copy_async(kNonBlocking);
  cuStreamAddCallback_params callback{reinterpret_cast<CUstream>(kNonBlocking), nullptr, nullptr, 0};
  calls.entered(D, CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback, ApiKind::Other, "cuStreamAddCallback", &callback);
  EXPECT_FALSE(guarded());
}

TEST(GuardCallsKinds, EventRecordsReachTheCallbacksThatReturn) {
  EXPECT_EQ(api_kind("cudaEventRecord"), ApiKind::EventRecord);
  EXPECT_EQ(api_kind("cudaEventRecordWithFlags_ptsz"), ApiKind::EventRecord);
  EXPECT_EQ(api_kind("cuEventRecord"), ApiKind::EventRecord);
  EXPECT_EQ(api_kind("cudaEventSynchronize"), ApiKind::Sync);
  const auto driver = guard_driver_callbacks();
  EXPECT_NE(std::find(driver.begin(), driver.end(), CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback), driver.end());
}

}  // namespace
}  // namespace gpudiag::cupti
