#include "callbacks.h"

#include <cupti.h>
#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "copy_guard_calls.h"
#include "event_calls.h"
#include "gpudiag/api_kinds.h"
#include "kernel_args.h"
#include "memory_calls.h"

namespace gpudiag::cupti {
namespace {

constexpr std::size_t kMaxPendingStacks = 1u << 16;

// State the callbacks use. Never destroyed: CUPTI and other threads may call
// back while static destructors run at exit.
struct State {
  CUpti_SubscriberHandle subscriber = nullptr;
  // ApiKind of every callback id, per domain, filled once before subscribing.
  std::vector<ApiKind> runtime_kinds, driver_kinds;
  std::mutex stacks_mutex;
  std::unordered_map<std::uint32_t, rec::StackId> stacks;  // correlation -> stack of the issuing call
  std::unordered_set<std::uint32_t> queries;                // correlations of stream and event queries
  std::mutex devices_mutex;
  std::set<std::int32_t> described_devices;
  // Streams whose handle the trace has (device, CUPTI stream id).
  std::mutex streams_mutex;
  std::set<std::pair<std::int32_t, std::uint64_t>> described_streams;
  // The stream each event was last recorded on, as the call named it: made
  // a device and stream id only for a query that finds the event done.
  struct RecordedOn {
    CUcontext context = nullptr;
    const void* stream = nullptr;
    bool per_thread_stream = false;
  };
  std::mutex events_mutex;
  std::unordered_map<const void*, RecordedOn> event_streams;
  // Driver entry points, looked up once in the libcuda that loaded us (this
  // library links none, so that it loads, and can be checked, where no driver
  // is): never from a callback, where the loader's lock could meet the driver's.
  int (*mem_get_info)(std::size_t*, std::size_t*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_get_name)(char*, int, int) = nullptr;
  int (*device_total_mem)(std::size_t*, int) = nullptr;
  int (*device_get_attribute)(int*, int, int) = nullptr;
  ParamInfoFn param_info = nullptr;
  KernelParamInfoFn kernel_param_info = nullptr;
  CUresult (*pointer_get_attributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
  // Each kernel's pointer-sized parameters, found once; forgotten when a
  // module is unloaded, since a later kernel may get the same handle.
  std::mutex kernels_mutex;
  std::unordered_map<CUfunction, std::shared_ptr<const std::vector<Param>>> kernel_params;
  // Devices whose kernels may read pageable host memory (HMM, ATS): there a
  // malloc'd pointer is no mistake.
  std::set<std::int32_t> pageable_devices;
  // The copy guard (GD003 as it happens), nullptr when off.
  GuardCalls* guard = nullptr;
};

State& state() {
  static State* s = new State();
  return *s;
}

// Runtime calls in progress on this thread. The runtime implements its calls
// with driver calls; those are the runtime call's own business (its memory is
// recorded once, from the runtime call, and its failure is the runtime
// call's), so driver callbacks inside a runtime call are ignored.
thread_local int t_runtime_depth = 0;
// The runtime launch in progress on this thread (0: none), whose driver
// launch records the arguments.
thread_local std::uint64_t t_launch_correlation = 0;

ApiKind kind_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const auto& kinds = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? state().runtime_kinds : state().driver_kinds;
  return cbid < kinds.size() ? kinds[cbid] : ApiKind::Other;
}

std::int32_t device_of(CUcontext context) {
  std::uint32_t id = 0;
  return cuptiGetDeviceId(context, &id) == CUPTI_SUCCESS ? static_cast<std::int32_t>(id) : kHostDevice;
}

std::uint64_t stream_id(CUcontext context, CUstream stream, bool per_thread) {
  std::uint32_t id = 0;
  if (cuptiGetStreamIdEx(context, stream, per_thread ? 1 : 0, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

std::uint64_t stream_id(CUcontext context, const MemoryEffect& e) {
  return stream_id(context, static_cast<CUstream>(const_cast<void*>(e.stream)), e.per_thread_stream);
}

DriverMemory driver_memory(std::uint64_t address) {
  const auto get = state().pointer_get_attributes;
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

std::shared_ptr<const std::vector<Param>> params_of(CUfunction kernel) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.kernels_mutex);
  auto& params = s.kernel_params[kernel];
  if (!params) params = std::make_shared<const std::vector<Param>>(pointer_params(kernel, s.param_info, s.kernel_param_info));
  return params;
}

void forget_kernels() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.kernels_mutex);
  s.kernel_params.clear();
}

bool reads_pageable_memory(std::int32_t device) {
  std::lock_guard<std::mutex> lock(state().devices_mutex);
  return state().pageable_devices.count(device) != 0;
}

// Records once which handle a stream of the trace has, so that what names
// streams by handle (PyTorch's allocator history) can be matched to it.
void describe_stream(std::int32_t device, std::uint64_t id, const Launch& launch) {
  // A thread launches on one stream many times in a row: no lock for that.
  thread_local std::pair<std::int32_t, std::uint64_t> last{kHostDevice, 0};
  if (last == std::make_pair(device, id)) return;
  last = {device, id};
  {
    std::lock_guard<std::mutex> lock(state().streams_mutex);
    if (!state().described_streams.emplace(device, id).second) return;
  }
  // A _ptsz call's stream 0 is the per-thread default stream, whose handle is CU_STREAM_PER_THREAD.
  const auto handle = launch.stream == nullptr && launch.per_thread_stream
                          ? reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD)
                          : reinterpret_cast<std::uintptr_t>(launch.stream);
  rec::record(rec::StreamInfo{.device = device, .id = id, .handle = handle, .handle_known = true});
}

// One KernelArg per pointer-sized parameter that points into memory, and per
// word of a small aggregate parameter that points into memory the driver knows. Only a
// driver launch names its kernel: a runtime launch's host stub would take a
// runtime call to resolve, and a callback makes none (it would be recorded,
// and its failure left as the program's last error).
void record_kernel_args(const Launch& launch, CUcontext context, std::uint64_t correlation, rec::StackId stack) {
  if (!launch.is_launch()) return;
  const auto held = params_of(launch.function);
  const std::vector<Param>& params = *held;
  if (params.empty()) return;
  const std::uint64_t time = rec::now_ns();
  const std::int32_t device = device_of(context);
  std::uint64_t stream = 0;
  bool stream_known = false;
  for (const Param& p : params)
    for (std::uint32_t word = 0; word < p.words; ++word) {
      std::uint64_t value = 0;
      if (!param_value(launch, p, word, value)) break;
      // A struct's word may be any number: only memory the driver knows makes it a pointer.
      const MemKind memory = p.aggregate ? driver_memory_of(value, driver_memory) : memory_of(value, driver_memory);
      if (memory == MemKind::Unknown) continue;
      if (memory == MemKind::Pageable && reads_pageable_memory(device)) continue;
      if (!stream_known) {
        stream = stream_id(context, launch.stream, launch.per_thread_stream), stream_known = true;
        if (stream != 0) describe_stream(device, stream, launch);  // 0: CUPTI could not name it
      }
      rec::record(rec::KernelArgEvent{.time_ns = time, .value = value, .index = p.index, .memory = memory,
                                      .device = device, .stream = stream, .correlation = correlation, .stack = stack});
    }
}

template <class Fn>
void look_up(void* libcuda, const char* name, Fn& fn) {
  fn = libcuda ? reinterpret_cast<Fn>(dlsym(libcuda, name)) : nullptr;
}

void record_out_of_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time, rec::StackId stack) {
  rec::OutOfMemoryEvent oom{.time_ns = time, .requested_bytes = e.bytes, .device = device_of(cb.context), .stack = stack};
  if (e.kind == MemKind::Pinned) {
    oom.device = kHostDevice;
  } else if (state().mem_get_info != nullptr) {
    std::size_t free = 0, total = 0;
    if (state().mem_get_info(&free, &total) == 0) oom.free_bytes = free, oom.capacity_bytes = total;
  }
  rec::record(oom);
}

void record_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time, rec::StackId stack) {
  const std::int32_t device = e.kind == MemKind::Pinned ? kHostDevice : device_of(cb.context);
  const std::uint64_t stream = e.stream_ordered ? stream_id(cb.context, e) : 0;
  if (e.op == MemoryEffect::Op::Alloc)
    rec::record(rec::AllocEvent{.time_ns = time, .addr = e.addr, .bytes = e.bytes, .kind = e.kind, .device = device,
                                .stream = stream, .correlation = cb.correlationId, .stack = stack});
  else
    rec::record(rec::FreeEvent{.time_ns = time, .addr = e.addr, .bytes = e.bytes, .kind = e.kind, .device = device,
                               .stream = stream, .correlation = cb.correlationId, .stack = stack});
}

// Which stream an event was recorded on, for the queries that find it done.
// Events are recorded far more often than found done by a query (PyTorch's
// allocators record one per use): no CUPTI call here.
void note_event_recorded(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const EventUse use = event_use(domain, cbid, cb.functionParams);
  if (use.op != EventUse::Op::Record) return;
  std::lock_guard<std::mutex> lock(state().events_mutex);
  state().event_streams[use.event] = {cb.context, use.stream, use.per_thread_stream};
}

// A query that found its stream, or its event, done ordered the work of that
// stream before it: a Sync of the stream that did not block (PyTorch's
// allocators learn this way that another stream is done with a block).
void record_completed_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb,
                            std::uint64_t start, std::uint64_t end, rec::StackId stack) {
  State::RecordedOn queried;  // the stream whose work is known done, and its context
  std::uintptr_t event = 0;
  if (const QueriedStream q = queried_stream(domain, cbid, cb.functionParams); q.queried) {
    queried = {cb.context, q.stream, q.per_thread_stream};
  } else {
    const EventUse use = event_use(domain, cbid, cb.functionParams);
    if (use.op != EventUse::Op::Query) return;
    std::lock_guard<std::mutex> lock(state().events_mutex);
    const auto it = state().event_streams.find(use.event);
    if (it == state().event_streams.end()) return;
    queried = it->second;
    event = reinterpret_cast<std::uintptr_t>(use.event);
  }
  // 0: the stream is gone; the query's call stays an unknown synchronisation.
  const std::uint64_t stream =
      stream_id(queried.context, static_cast<CUstream>(const_cast<void*>(queried.stream)), queried.per_thread_stream);
  if (stream == 0) return;
  rec::record(rec::SyncEvent{.start_ns = start, .end_ns = end, .kind = SyncKind::Query,
                             .device = device_of(queried.context), .stream = stream, .event = event,
                             .correlation = cb.correlationId, .stack = stack});
}

void on_return(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb, ApiKind kind,
               std::int32_t status) {
  // An event recorded is noted, and the copy guard's business: a program that
  // records events all the time (PyTorch's allocators) pays no stack for it.
  if (kind == ApiKind::EventRecord && status == 0) {
    note_event_recorded(domain, cbid, cb);
    if (GuardCalls* guard = state().guard) guard->returned(domain, cbid, cb.functionParams, status, cb.correlationId);
    return;
  }
  const std::uint64_t end = rec::now_ns();
  // Only analysed calls had their start noted on entry.
  const std::uint64_t start = kind != ApiKind::Other && cb.correlationData && *cb.correlationData ? *cb.correlationData : end;
  const rec::StackId stack = rec::capture_stack();
  rec::record(rec::ApiEvent{.start_ns = start, .end_ns = end, .name = rec::intern(cb.functionName ? cb.functionName : ""),
                            .domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? ApiDomain::Runtime : ApiDomain::Driver,
                            .status = status, .correlation = cb.correlationId, .stack = stack,
                            .symbol = kind == ApiKind::Launch && cb.symbolName ? rec::intern(cb.symbolName) : 0});
  if (kind == ApiKind::Memory) {
    const MemoryEffect e = memory_effect(domain, cbid, cb.functionParams, status == 0);
    if (e.op != MemoryEffect::Op::None && status == 0) record_memory(cb, e, end, stack);
    // Out of memory is an allocation's failure (GD008); the same status of a
    // registration or a mapping is that call's own error (GD006).
    if (e.op == MemoryEffect::Op::Alloc && status == kCudaOutOfMemory && cb.functionName &&
        is_allocation_call(cb.functionName))
      record_out_of_memory(cb, e, end, stack);
  } else if (kind != ApiKind::Other) {
    // CUPTI reports every query, done or not, as a synchronisation record,
    // which is dropped: a query's stack goes only into its own Sync below.
    const bool query = is_query(domain, cbid);
    if (stack != 0 || query) {
      std::lock_guard<std::mutex> lock(state().stacks_mutex);
      if (query)
        state().queries.insert(cb.correlationId);
      else
        state().stacks[cb.correlationId] = stack;
    }
  }
  if (kind == ApiKind::Sync && status == 0) record_completed_query(domain, cbid, cb, start, end, stack);
  // A runtime launch's arguments come from the driver launch inside it.
  if (kind == ApiKind::Launch && status == 0)
    record_kernel_args(launch_of(domain, cbid, cb.functionParams), cb.context, cb.correlationId, stack);
  if (GuardCalls* guard = state().guard) guard->returned(domain, cbid, cb.functionParams, status, cb.correlationId);
}

void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const ApiKind kind = kind_of(domain, cbid);
  if (cb.callbackSite == CUPTI_API_ENTER) {
    if (runtime)
      ++t_runtime_depth;
    else if (t_runtime_depth > 0)
      return;
    if (kind != ApiKind::Other && cb.correlationData) *cb.correlationData = rec::now_ns();
    // Driver launches inside any other runtime call belong to no launch of ours.
    if (runtime) t_launch_correlation = kind == ApiKind::Launch ? cb.correlationId : 0;
    if (GuardCalls* guard = state().guard) guard->entered(domain, cbid, kind, cb.functionName, cb.functionParams);
    return;
  }
  // An exit whose entry came before the callbacks were enabled leaves the count alone.
  if (runtime) {
    t_runtime_depth = t_runtime_depth > 0 ? t_runtime_depth - 1 : 0;
  } else if (t_runtime_depth > 0) {
    // The driver launch inside a runtime launch holds the kernel and its
    // arguments; they belong to the runtime call, as its kernel does.
    if (kind == ApiKind::Launch && t_launch_correlation != 0) {
      const Launch launch = launch_of(domain, cbid, cb.functionParams);
      if (launch.is_launch()) record_kernel_args(launch, cb.context, t_launch_correlation, 0);
    }
    return;
  }
  std::int32_t status = 0;  // cudaError_t or CUresult: both an int-sized enum
  if (cb.functionReturnValue) std::memcpy(&status, cb.functionReturnValue, sizeof status);
  // Calls nobody analyses are recorded only when they fail ("not ready" is a
  // query's answer, not a failure).
  if (kind == ApiKind::Other && (status == 0 || status == kCudaNotReady)) return;
  on_return(domain, cbid, cb, kind, status);
}

void describe_device(CUcontext context) {
  State& s = state();
  const std::int32_t ordinal = device_of(context);
  if (ordinal < 0) return;
  {
    std::lock_guard<std::mutex> lock(s.devices_mutex);
    if (!s.described_devices.insert(ordinal).second) return;
  }
  rec::DeviceInfo info{.id = ordinal};
  int device = 0;
  if (s.device_get && s.device_get(&device, ordinal) == 0) {
    std::array<char, 256> text{};
    if (s.device_get_name && s.device_get_name(text.data(), static_cast<int>(text.size()), device) == 0)
      info.name = rec::intern(text.data());
    std::size_t bytes = 0;
    if (s.device_total_mem && s.device_total_mem(&bytes, device) == 0) info.memory_bytes = bytes;
    int pageable = 0;
    if (s.device_get_attribute &&
        s.device_get_attribute(&pageable, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, device) == 0 && pageable != 0) {
      std::lock_guard<std::mutex> lock(s.devices_mutex);
      s.pageable_devices.insert(ordinal);
    }
  }
  rec::record(info);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) describe_device(static_cast<const CUpti_ResourceData*>(data)->context);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) forget_kernels();
    return;
  }
  on_api(domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
}

// GPUDIAG_TRACE_GUARD=off (gpudiag trace --guard-copies off) turns the copy guard off.
bool guard_copies() {
  const char* v = std::getenv("GPUDIAG_TRACE_GUARD");
  return v == nullptr || std::strcmp(v, "off") != 0;
}

std::vector<ApiKind> kinds_of(CUpti_CallbackDomain domain, CUpti_CallbackId count) {
  std::vector<ApiKind> kinds(count, ApiKind::Other);
  for (CUpti_CallbackId id = 1; id < count; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) == CUPTI_SUCCESS && name != nullptr) kinds[id] = api_kind(name);
  }
  return kinds;
}

std::string failure(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string(what) + ": " + (text ? text : "unknown error");
}

}  // namespace

std::string enable_callbacks() {
  State& s = state();
  s.runtime_kinds = kinds_of(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  s.driver_kinds = kinds_of(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  look_up(libcuda, "cuMemGetInfo_v2", s.mem_get_info);
  look_up(libcuda, "cuDeviceGet", s.device_get);
  look_up(libcuda, "cuDeviceGetName", s.device_get_name);
  look_up(libcuda, "cuDeviceTotalMem_v2", s.device_total_mem);
  look_up(libcuda, "cuDeviceGetAttribute", s.device_get_attribute);
  look_up(libcuda, "cuFuncGetParamInfo", s.param_info);
  look_up(libcuda, "cuKernelGetParamInfo", s.kernel_param_info);
  look_up(libcuda, "cuPointerGetAttributes", s.pointer_get_attributes);
  if (guard_copies()) {
    GuardProbes probes;
    look_up(libcuda, "cuPointerGetAttribute", probes.pointer_get_attribute);
    look_up(libcuda, "cuStreamGetFlags", probes.stream_get_flags);
    look_up(libcuda, "cuStreamIsCapturing", probes.stream_is_capturing);
    // Nothing is guarded where a fault could not come back to the guard.
    if (probes.complete() && install_copy_guard()) s.guard = new GuardCalls(*copy_guard(), probes);
  }
  if (CUptiResult r = cuptiSubscribe(&s.subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
      r != CUPTI_SUCCESS)
    return failure("cuptiSubscribe", r);
  if (CUptiResult r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API); r != CUPTI_SUCCESS)
    return failure("enabling the runtime API callbacks", r);
  for (CUpti_CallbackId id = 1; id < s.driver_kinds.size(); ++id)
    if (s.driver_kinds[id] != ApiKind::Other) cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (s.guard != nullptr)
    for (CUpti_CallbackId id : guard_driver_callbacks()) cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (CUptiResult r = cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
      r != CUPTI_SUCCESS)
    return failure("enabling the context-creation callback", r);
  cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  return {};
}

rec::StackId stack_of_call(std::uint32_t correlation) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.stacks_mutex);
  auto it = s.stacks.find(correlation);
  return it == s.stacks.end() ? 0 : it->second;  // kept: a graph launch has many kernels
}

void note_unguarded_copies() {
  const CopyGuard* guard = state().guard != nullptr ? copy_guard() : nullptr;
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
  State& s = state();
  std::lock_guard<std::mutex> lock(s.stacks_mutex);
  return s.queries.erase(correlation) != 0;
}

void forget_old_stacks() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.stacks_mutex);
  if (s.stacks.size() > kMaxPendingStacks) s.stacks.clear();
  if (s.queries.size() > kMaxPendingStacks) s.queries.clear();
}

}  // namespace gpudiag::cupti
