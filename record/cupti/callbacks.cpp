#include "callbacks.h"

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api_calls.h"
#include "callback_set.h"
#include "copy_guard_calls.h"

namespace gpudiag::cupti {
namespace {

// What the callbacks do, made once before subscribing. Never destroyed:
// CUPTI and other threads may call back while static destructors run at exit.
std::atomic<ApiCalls*> g_calls{nullptr};
CUpti_SubscriberHandle g_subscriber = nullptr;
// Driver entry points, looked up once in the libcuda that loaded us (this
// library links none, so that it loads, and can be checked, where no driver
// is): never from a callback, where the loader's lock could meet the driver's.
CUresult (*g_pointer_get_attributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;

std::int32_t device_of(CUcontext context) {
  std::uint32_t id = 0;
  return cuptiGetDeviceId(context, &id) == CUPTI_SUCCESS ? static_cast<std::int32_t>(id) : kHostDevice;
}

std::uint64_t stream_id(CUcontext context, CUstream stream, bool per_thread) {
  std::uint32_t id = 0;
  if (cuptiGetStreamIdEx(context, stream, per_thread ? 1 : 0, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

DriverMemory driver_memory(std::uint64_t address) {
  const auto get = g_pointer_get_attributes;
  if (get == nullptr) return DriverMemory::NotKnown;
  // An address the driver does not know gets zeros, not an error.
  unsigned int type = 0, managed = 0;  // CUmemorytype; a bool, in a zeroed int
  CUpointer_attribute attributes[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* data[2] = {&type, &managed};
  if (get(2, attributes, data, static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS) return DriverMemory::NotKnown;
  if (managed != 0) return DriverMemory::Managed;
  if (type == CU_MEMORYTYPE_DEVICE) return DriverMemory::Device;
  if (type == CU_MEMORYTYPE_HOST) return DriverMemory::Host;
  return DriverMemory::NotKnown;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  ApiCalls* calls = g_calls.load(std::memory_order_acquire);
  if (calls == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) calls->context_created(static_cast<const CUpti_ResourceData*>(data)->context);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) calls->module_unloading();
    return;
  }
  calls->on_api(domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
}

// GPUDIAG_TRACE_GUARD=off (gpudiag trace --guard-copies off) turns the copy guard off.
bool guard_copies() {
  const char* v = std::getenv("GPUDIAG_TRACE_GUARD");
  return v == nullptr || std::strcmp(v, "off") != 0;
}

// A measurement switch (GPUDIAG_TRACE_KERNEL_ARGS=off): on unless "off"; any
// other value is said once and taken as on, so a typo never loses evidence.
bool switch_on(const char* variable) {
  const char* v = std::getenv(variable);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "on") == 0) return true;
  if (std::strcmp(v, "off") == 0) return false;
  std::fprintf(stderr, "gpudiag: %s=%s is neither on nor off; taken as on\n", variable, v);
  return true;
}

// GPUDIAG_TRACE_API_CALLBACKS (callback_set.h); an unknown value is said once and taken as all.
CallbackMode api_callback_mode() {
  const char* v = std::getenv("GPUDIAG_TRACE_API_CALLBACKS");
  if (const auto mode = callback_mode(v != nullptr ? v : "")) return *mode;
  std::fprintf(stderr, "gpudiag: GPUDIAG_TRACE_API_CALLBACKS=%s is not one of all, deny, analysed, off; taken as all\n", v);
  return CallbackMode::All;
}

template <class Fn>
void look_up(void* libcuda, const char* name, Fn& fn) {
  fn = libcuda ? reinterpret_cast<Fn>(dlsym(libcuda, name)) : nullptr;
}

std::string failure(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string(what) + ": " + (text ? text : "unknown error");
}

}  // namespace

std::string enable_callbacks() {
  const std::vector<std::string> runtime_names = callback_names(CUPTI_CB_DOMAIN_RUNTIME_API);
  const std::vector<std::string> driver_names = callback_names(CUPTI_CB_DOMAIN_DRIVER_API);
  void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  DriverProbes probes{.device_of = device_of, .stream_id = stream_id, .pointer_query = driver_memory};
  look_up(libcuda, "cuMemGetInfo_v2", probes.mem_get_info);
  look_up(libcuda, "cuDeviceGet", probes.device_get);
  look_up(libcuda, "cuDeviceGetName", probes.device_get_name);
  look_up(libcuda, "cuDeviceTotalMem_v2", probes.device_total_mem);
  look_up(libcuda, "cuDeviceGetAttribute", probes.device_get_attribute);
  look_up(libcuda, "cuDeviceGetUuid_v2", probes.device_get_uuid);
  look_up(libcuda, "cuDeviceGetUuid", probes.device_get_gpu_uuid);
  // A driver from before the _v2 has no MIG instances to tell apart.
  if (probes.device_get_uuid == nullptr) probes.device_get_uuid = probes.device_get_gpu_uuid;
  look_up(libcuda, "cuFuncGetParamInfo", probes.param_info);
  look_up(libcuda, "cuKernelGetParamInfo", probes.kernel_param_info);
  look_up(libcuda, "cuPointerGetAttributes", g_pointer_get_attributes);
  GuardCalls* guard = nullptr;
  if (guard_copies()) {
    GuardProbes guard_probes;
    look_up(libcuda, "cuPointerGetAttribute", guard_probes.pointer_get_attribute);
    look_up(libcuda, "cuStreamGetFlags", guard_probes.stream_get_flags);
    look_up(libcuda, "cuStreamIsCapturing", guard_probes.stream_is_capturing);
    // Nothing is guarded where a fault could not come back to the guard.
    if (guard_probes.complete() && install_copy_guard()) guard = new GuardCalls(*copy_guard(), guard_probes);
  }
  const ApiCallsOptions options{.kernel_args = switch_on("GPUDIAG_TRACE_KERNEL_ARGS")};
  g_calls.store(new ApiCalls(probes, kinds_of(runtime_names), kinds_of(driver_names), guard, options),
                std::memory_order_release);
  const CallbackSet set = callback_set(runtime_names, driver_names, api_callback_mode(), guard != nullptr);
  if (CUptiResult r = cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
      r != CUPTI_SUCCESS)
    return failure("cuptiSubscribe", r);
  if (set.runtime_domain)
    if (CUptiResult r = cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API); r != CUPTI_SUCCESS)
      return failure("enabling the runtime API callbacks", r);
  for (CUpti_CallbackId id : set.runtime) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (CUpti_CallbackId id : set.driver) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (CUptiResult r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
      r != CUPTI_SUCCESS)
    return failure("enabling the context-creation callback", r);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  return {};
}

rec::StackId stack_of_call(std::uint32_t correlation) {
  ApiCalls* calls = g_calls.load(std::memory_order_acquire);
  return calls != nullptr ? calls->stack_of_call(correlation) : 0;
}

void note_unguarded_copies() {
  ApiCalls* calls = g_calls.load(std::memory_order_acquire);
  const CopyGuard* guard = calls != nullptr && calls->guard() != nullptr ? copy_guard() : nullptr;
  if (guard == nullptr) return;
  const GuardStats stats = guard->stats();
  if (stats.table_full + stats.protect_failed == 0) return;
  std::fprintf(stderr,
               "gpudiag: %llu asynchronous copies were not guarded (%llu while %zu guards were pending, %llu refused by "
               "mprotect): a host read of their destination before a sync was not checked\n",
               static_cast<unsigned long long>(stats.table_full + stats.protect_failed),
               static_cast<unsigned long long>(stats.table_full), CopyGuard::kCapacity,
               static_cast<unsigned long long>(stats.protect_failed));
}

bool is_query_call(std::uint32_t correlation) {
  ApiCalls* calls = g_calls.load(std::memory_order_acquire);
  return calls != nullptr && calls->is_query_call(correlation);
}

}  // namespace gpudiag::cupti
