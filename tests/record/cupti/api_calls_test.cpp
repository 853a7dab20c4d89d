// The callback bodies (api_calls.h) driven as CUPTI drives them, with
// callback data and parameter structs built here and a fake driver: what a
// launch, an uninteresting call and a failed one leave in the trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "api_calls.h"
#include "callback_set.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::cupti {
namespace {

namespace fs = std::filesystem;

// Device memory the fake driver knows: one 1 MiB allocation.
constexpr std::uint64_t kDeviceBase = 0x7f1200000000ull, kDeviceBytes = 1u << 20;
constexpr std::int32_t kDevice = 3;
constexpr std::uint64_t kStream = 17;

int g_pointer_queries = 0;
int g_kernels_described = 0;  // cuFuncGetParamInfo asked for a kernel's first parameter
int g_devices_asked = 0;

DriverMemory fake_pointer_query(std::uint64_t address) {
  ++g_pointer_queries;
  return address >= kDeviceBase && address < kDeviceBase + kDeviceBytes ? DriverMemory::Device : DriverMemory::NotKnown;
}
std::int32_t fake_device_of(CUcontext) {
  ++g_devices_asked;
  return kDevice;
}
std::uint64_t fake_stream_id(CUcontext, CUstream, bool) { return kStream; }
// A kernel (float* out, int n, const float* in).
CUresult fake_param_info(CUfunction, std::size_t index, std::size_t* offset, std::size_t* size) {
  constexpr std::size_t offsets[] = {0, 8, 16}, sizes[] = {8, 4, 8};
  if (index >= 3) return CUDA_ERROR_INVALID_VALUE;
  if (index == 0) ++g_kernels_described;
  *offset = offsets[index];
  *size = sizes[index];
  return CUDA_SUCCESS;
}

DriverProbes fake_driver() {
  return {.device_of = fake_device_of, .stream_id = fake_stream_id, .pointer_query = fake_pointer_query,
          .param_info = fake_param_info};
}

// One callback as CUPTI hands it over.
struct Call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* name;
  const void* params;
  std::uint32_t correlation;
  std::int32_t status = 0;
  const char* symbol = nullptr;
  std::uint64_t correlation_data = 0;

  CUpti_CallbackData data(CUpti_ApiCallbackSite site) {
    CUpti_CallbackData cb{};
    cb.callbackSite = site;
    cb.functionName = name;
    cb.functionParams = params;
    cb.functionReturnValue = &status;
    cb.symbolName = symbol;
    cb.correlationId = correlation;
    cb.correlationData = &correlation_data;
    return cb;
  }
  void enter(ApiCalls& calls) {
    const CUpti_CallbackData cb = data(CUPTI_API_ENTER);
    calls.on_api(domain, cbid, cb);
  }
  void exit(ApiCalls& calls) {
    const CUpti_CallbackData cb = data(CUPTI_API_EXIT);
    calls.on_api(domain, cbid, cb);
  }
};

class ApiCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_pointer_queries = g_kernels_described = g_devices_asked = 0;
    path_ = (fs::temp_directory_path() / ("api_calls_test-" + std::to_string(getpid()) + ".gdtrace")).string();
    rec::Options options;
    options.writer_thread = false;
    ASSERT_TRUE(rec::start(path_.c_str(), options));
  }
  void TearDown() override {
    if (rec::enabled()) rec::stop();
    fs::remove(path_);
  }
  Trace stop_and_read() {
    rec::stop();
    return read_gdtrace(path_);
  }
  ApiCalls make(ApiCallsOptions options = {}) {
    return ApiCalls(fake_driver(), callback_kinds(CUPTI_CB_DOMAIN_RUNTIME_API), callback_kinds(CUPTI_CB_DOMAIN_DRIVER_API),
                    nullptr, options);
  }
  // cudaLaunchKernel(stub, args) -> cuLaunchKernel(kernel, args) inside it.
  void launch(ApiCalls& calls, void** args, std::uint32_t correlation = 41) {
    int stub = 0;
    cudaLaunchKernel_v7000_params runtime_params{};
    runtime_params.func = &stub;
    runtime_params.args = args;
    Call runtime{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
                 &runtime_params, correlation, 0, "scale_kernel"};
    cuLaunchKernel_params driver_params{};
    driver_params.f = reinterpret_cast<CUfunction>(0x1234);
    driver_params.kernelParams = args;
    driver_params.hStream = reinterpret_cast<CUstream>(0x99);
    Call driver{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &driver_params,
                correlation + 1};
    runtime.enter(calls);
    driver.enter(calls);
    driver.exit(calls);
    runtime.exit(calls);
  }
  std::string path_;
};

TEST_F(ApiCallsTest, CallbackKindsComeFromCuptisNamesWithoutADriver) {
  const auto runtime = callback_kinds(CUPTI_CB_DOMAIN_RUNTIME_API);
  ASSERT_EQ(runtime.size(), std::size_t{CUPTI_RUNTIME_TRACE_CBID_SIZE});
  EXPECT_EQ(runtime[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000], ApiKind::Launch);
  EXPECT_EQ(runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020], ApiKind::Memory);
  EXPECT_EQ(runtime[CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020], ApiKind::Other);
  EXPECT_EQ(callback_kinds(CUPTI_CB_DOMAIN_DRIVER_API)[CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel], ApiKind::Launch);
}

TEST_F(ApiCallsTest, ARuntimeLaunchRecordsItsCallAndThePointerArgumentsOfTheDriverLaunchInside) {
  ApiCalls calls = make();
  float* out = reinterpret_cast<float*>(kDeviceBase + 256);
  float* in = reinterpret_cast<float*>(kDeviceBase + 4096);
  int n = 64;
  void* args[] = {&out, &n, &in};
  launch(calls, args);
  const Trace t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 1u) << "the driver launch inside is the runtime launch's own business";
  EXPECT_EQ(t.str(t.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(t.str(t.api_calls[0].symbol), "scale_kernel");
  EXPECT_EQ(t.api_calls[0].correlation, 41u);
  ASSERT_EQ(t.kernel_args.size(), 2u);
  EXPECT_EQ(t.kernel_args[0].index, 0u);
  EXPECT_EQ(t.kernel_args[0].value, kDeviceBase + 256);
  EXPECT_EQ(t.kernel_args[1].index, 2u);
  EXPECT_EQ(t.kernel_args[1].value, kDeviceBase + 4096);
  for (const KernelArg& a : t.kernel_args) {
    EXPECT_EQ(a.correlation, 41u) << "the runtime call's correlation, which its kernel record carries";
    EXPECT_EQ(a.memory, MemKind::Device);
    EXPECT_EQ(a.device, kDevice);
    EXPECT_EQ(a.stream, kStream);
  }
  EXPECT_EQ(g_pointer_queries, 2) << "one driver query per pointer-sized argument";
}

// cudaMalloc(&p, bytes) as it returns.
void allocate(ApiCalls& calls, std::uint64_t address, std::size_t bytes, std::uint32_t correlation) {
  void* written = reinterpret_cast<void*>(address);
  cudaMalloc_v3020_params params{&written, bytes};
  Call malloc{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", &params, correlation};
  malloc.enter(calls);
  malloc.exit(calls);
}

void free_memory(ApiCalls& calls, std::uint64_t address, std::uint32_t correlation) {
  cudaFree_v3020_params params{reinterpret_cast<void*>(address)};
  Call free{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", &params, correlation};
  free.enter(calls);
  free.exit(calls);
}

TEST_F(ApiCallsTest, PointersIntoAllocationsItSawMadeNeedNoDriverQuery) {
  ApiCalls calls = make();
  allocate(calls, kDeviceBase, kDeviceBytes, 30);
  float* out = reinterpret_cast<float*>(kDeviceBase + 256);
  int n = 64;
  void* args[] = {&out, &n, &out};
  launch(calls, args);
  EXPECT_EQ(g_pointer_queries, 0);
  free_memory(calls, kDeviceBase, 31);
  launch(calls, args);
  EXPECT_EQ(g_pointer_queries, 2) << "freed: the driver's to answer again";
  const Trace t = stop_and_read();
  ASSERT_EQ(t.kernel_args.size(), 4u);
  for (const KernelArg& a : t.kernel_args) EXPECT_EQ(a.memory, MemKind::Device);
}

// Mapped memory may be the host's: the driver says which, launch after launch.
TEST_F(ApiCallsTest, PointersIntoMappedMemoryAreStillTheDriversToResolve) {
  ApiCalls calls = make();
  cuMemMap_params params{kDeviceBase, kDeviceBytes, 0, 0, 0};
  Call map{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap, "cuMemMap", &params, 30};
  map.enter(calls);
  map.exit(calls);
  float* out = reinterpret_cast<float*>(kDeviceBase + 256);
  int n = 64;
  void* args[] = {&out, &n, &out};
  launch(calls, args);
  EXPECT_EQ(g_pointer_queries, 2);
  const Trace t = stop_and_read();
  EXPECT_EQ(t.allocs.size(), 1u) << "recorded all the same";
  EXPECT_EQ(t.kernel_args.size(), 2u);
}

// A graph launch's kernels each ask for the stack of the launch call.
TEST_F(ApiCallsTest, ACallsStackIsFoundAsOftenAsAskedUntilALaterCallTakesItsSlot) {
  ApiCalls calls = make();
  int n = 1;
  void* args[] = {&n, &n, &n};
  launch(calls, args, 41);
  const rec::StackId stack = calls.stack_of_call(41);
  EXPECT_NE(stack, 0u);
  EXPECT_EQ(calls.stack_of_call(41), stack);
  EXPECT_EQ(calls.stack_of_call(40), 0u);
  const auto later = static_cast<std::uint32_t>(41 + ApiCalls::kCallSlots);
  launch(calls, args, later);
  EXPECT_EQ(calls.stack_of_call(41), 0u) << "its slot is the later call's: no stack rather than another's";
  EXPECT_NE(calls.stack_of_call(later), 0u);
}

TEST_F(ApiCallsTest, AQueryIsSaidOnceToBeOne) {
  ApiCalls calls = make();
  cudaStreamQuery_v3020_params params{reinterpret_cast<cudaStream_t>(0x99)};
  Call query{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, "cudaStreamQuery", &params, 77,
             600 /* cudaErrorNotReady */};
  query.enter(calls);
  query.exit(calls);
  EXPECT_TRUE(calls.is_query_call(77));
  EXPECT_FALSE(calls.is_query_call(77));
  EXPECT_FALSE(calls.is_query_call(78));
  EXPECT_EQ(calls.stack_of_call(77), 0u) << "a query's stack goes into its own Sync only";
}

// Each thread remembers its kernels' parameters and its context's device,
// until a module unload (a later kernel may get the same handle) or a
// context's end (a later context may get the same handle).
TEST_F(ApiCallsTest, KernelsAndDevicesAreAskedOnceUntilTheirModuleOrContextGoes) {
  ApiCalls calls = make();
  float* out = reinterpret_cast<float*>(kDeviceBase);
  int n = 1;
  void* args[] = {&out, &n, &out};
  launch(calls, args, 41);
  launch(calls, args, 43);
  EXPECT_EQ(g_kernels_described, 1);
  EXPECT_EQ(g_devices_asked, 1);
  calls.module_unloading();
  launch(calls, args, 45);
  EXPECT_EQ(g_kernels_described, 2);
  cuCtxDestroy_v2_params destroy{reinterpret_cast<CUcontext>(0x3)};
  Call ctx{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2, "cuCtxDestroy_v2", &destroy, 47};
  ctx.enter(calls);
  ctx.exit(calls);
  const int devices = g_devices_asked;
  launch(calls, args, 49);
  EXPECT_EQ(g_devices_asked, devices + 1);
  EXPECT_EQ(g_kernels_described, 3);
}

// GPUDIAG_TRACE_KERNEL_ARGS=off: the launch is recorded, its arguments are not even resolved.
TEST_F(ApiCallsTest, WithKernelArgumentsOffALaunchRecordsOnlyItsCall) {
  ApiCalls calls = make(ApiCallsOptions{.kernel_args = false});
  float* out = reinterpret_cast<float*>(kDeviceBase);
  int n = 64;
  void* args[] = {&out, &n, &out};
  launch(calls, args);
  const Trace t = stop_and_read();
  EXPECT_EQ(t.api_calls.size(), 1u);
  EXPECT_TRUE(t.kernel_args.empty());
  EXPECT_EQ(g_pointer_queries, 0);
}

TEST_F(ApiCallsTest, ASuccessfulUninterestingCallRecordsNothingAndAFailedOneItsCall) {
  ApiCalls calls = make();
  int device = 0;
  cudaGetDevice_v3020_params params{&device};
  Call ok{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", &params, 7};
  ok.enter(calls);
  ok.exit(calls);
  Call failed{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", &params, 8,
              100 /* cudaErrorNoDevice */};
  failed.enter(calls);
  failed.exit(calls);
  const Trace t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].correlation, 8u);
  EXPECT_EQ(t.api_calls[0].status, 100);
  EXPECT_EQ(t.str(t.api_calls[0].name), "cudaGetDevice");
}

TEST_F(ApiCallsTest, ASuccessfulEventRecordRecordsNoCall) {
  ApiCalls calls = make();
  cudaEventRecord_v3020_params params{reinterpret_cast<cudaEvent_t>(0x55), reinterpret_cast<cudaStream_t>(0x99)};
  Call record{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord", &params, 9};
  record.enter(calls);
  record.exit(calls);
  EXPECT_TRUE(stop_and_read().api_calls.empty()) << "PyTorch's allocators record an event per use";
}

// The device a context is created on is described once, named as
// nvidia-smi names it: by its GPU's UUID, a MIG instance by its own.
constexpr unsigned char kGpuUuid[16] = {0x5a, 0x8c, 0x1f, 0x2e, 0x0d, 0x3b, 0x4c, 0x7a,
                                        0x9e, 0x61, 0x2b, 0x4f, 0x8d, 0x0c, 0x7a, 0x13};
bool g_mig_instance = false;
int fake_device_get(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
int fake_device_name(char* name, int length, int) {
  std::snprintf(name, static_cast<std::size_t>(length), "%s", "NVIDIA H200");
  return 0;
}
int fake_gpu_uuid(CUuuid* uuid, int) {
  std::memcpy(uuid->bytes, kGpuUuid, sizeof kGpuUuid);
  return 0;
}
int fake_own_uuid(CUuuid* uuid, int device) {
  fake_gpu_uuid(uuid, device);
  if (g_mig_instance) uuid->bytes[15] = 0x14;
  return 0;
}

TEST_F(ApiCallsTest, ADeviceIsDescribedWithItsUuidAsNvidiaSmiWritesIt) {
  for (const bool mig : {false, true}) {
    SCOPED_TRACE(mig ? "a MIG instance" : "a GPU");
    g_mig_instance = mig;
    if (!rec::enabled()) {
      ASSERT_TRUE(rec::start(path_.c_str()));
    }
    DriverProbes probes = fake_driver();
    probes.device_get = fake_device_get;
    probes.device_get_name = fake_device_name;
    probes.device_get_uuid = fake_own_uuid;
    probes.device_get_gpu_uuid = fake_gpu_uuid;
    ApiCalls calls(probes, callback_kinds(CUPTI_CB_DOMAIN_RUNTIME_API), callback_kinds(CUPTI_CB_DOMAIN_DRIVER_API),
                   nullptr);
    calls.context_created(reinterpret_cast<CUcontext>(0x3));
    calls.context_created(reinterpret_cast<CUcontext>(0x3));
    const Trace t = stop_and_read();
    ASSERT_EQ(t.devices.size(), 1u);
    EXPECT_EQ(t.devices[0].id, kDevice);
    EXPECT_EQ(t.str(t.devices[0].name), "NVIDIA H200");
    EXPECT_EQ(t.str(t.devices[0].uuid), mig ? "MIG-5a8c1f2e-0d3b-4c7a-9e61-2b4f8d0c7a14"
                                             : "GPU-5a8c1f2e-0d3b-4c7a-9e61-2b4f8d0c7a13");
  }
}

// A driver that cannot say (or says sixteen zeros) leaves the UUID unsaid.
TEST_F(ApiCallsTest, ADeviceWhoseUuidTheDriverDoesNotSayHasNone) {
  DriverProbes probes = fake_driver();
  probes.device_get = fake_device_get;
  probes.device_get_uuid = [](CUuuid* uuid, int) {
    std::memset(uuid->bytes, 0, sizeof uuid->bytes);
    return 0;
  };
  ApiCalls calls(probes, callback_kinds(CUPTI_CB_DOMAIN_RUNTIME_API), callback_kinds(CUPTI_CB_DOMAIN_DRIVER_API),
                 nullptr);
  calls.context_created(reinterpret_cast<CUcontext>(0x3));
  const Trace t = stop_and_read();
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].uuid, 0u) << t.str(t.devices[0].uuid);
}

}  // namespace
}  // namespace gpudiag::cupti
