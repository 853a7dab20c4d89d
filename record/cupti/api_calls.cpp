#include "api_calls.h"

#include <array>
#include <cstring>
#include <string_view>

#include "device_uuid.h"
#include "event_calls.h"

namespace gpudiag::cupti {
namespace {

// Runtime calls in progress on this thread. The runtime implements its calls
// with driver calls; those are the runtime call's own business (its memory is
// recorded once, from the runtime call, and its failure is the runtime
// call's), so driver callbacks inside a runtime call are ignored.
thread_local int t_runtime_depth = 0;
// The runtime launch in progress on this thread (0: none), whose driver
// launch records the arguments.
thread_local std::uint64_t t_launch_correlation = 0;

// What this thread's launches needed last: the parameters of the kernels it
// launched (direct-mapped by handle) and the device of its context. Valid
// for one ApiCalls while its generation stays.
struct LaunchCache {
  const void* owner = nullptr;
  std::uint64_t generation = 0;
  CUcontext context = nullptr;
  std::int32_t device = kHostDevice;
  bool device_known = false;
  struct Kernel {
    CUfunction function = nullptr;
    const std::vector<Param>* params = nullptr;
  };
  std::array<Kernel, 64> kernels{};
};
thread_local LaunchCache t_launch;

LaunchCache& launch_cache(const void* owner, std::uint64_t generation) {
  LaunchCache& c = t_launch;
  if (c.owner != owner || c.generation != generation) c = LaunchCache{.owner = owner, .generation = generation};
  return c;
}

// Generations are unique across instances: one made where a destroyed one
// was (tests, the benchmark) never takes over a thread's cache of the old one.
std::atomic<std::uint64_t> g_last_generation{0};
std::uint64_t next_generation() { return g_last_generation.fetch_add(1, std::memory_order_relaxed) + 1; }

constexpr std::uint64_t kStackBits = 31;

std::uint64_t call_slot_value(std::uint32_t correlation, rec::StackId stack, bool query) {
  return std::uint64_t{correlation} << 32 | std::uint64_t{stack} << 1 | (query ? 1u : 0u);
}

// Calls after which no allocation of the context is left (entered: the
// context goes as the call runs).
bool ends_context(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaThreadExit_v3020;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2: return domain == CUPTI_CB_DOMAIN_DRIVER_API;
    default: return false;
  }
}

// Whether the kind an allocation call's memory is recorded with is the one
// the driver gives its addresses. Not for a mapping (cuMemMap) or a pool
// (cudaMallocFromPoolAsync), whose memory may be the host's: the driver says
// which, so those stay out of the live allocations.
bool kind_is_the_drivers(const char* name) {
  if (name == nullptr) return false;
  const std::string_view n(name);
  return !n.starts_with("cuMemMap") && n.find("FromPool") == std::string_view::npos;
}

}  // namespace

ApiCalls::ApiCalls(const DriverProbes& probes, std::vector<ApiKind> runtime_kinds, std::vector<ApiKind> driver_kinds,
                   GuardCalls* guard, ApiCallsOptions options)
    : probes_(probes),
      runtime_kinds_(std::move(runtime_kinds)),
      driver_kinds_(std::move(driver_kinds)),
      guard_(guard),
      options_(options),
      calls_(new std::atomic<std::uint64_t>[kCallSlots]()),
      generation_(next_generation()) {}

ApiKind ApiCalls::kind_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const {
  const auto& kinds = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_kinds_ : driver_kinds_;
  return cbid < kinds.size() ? kinds[cbid] : ApiKind::Other;
}

std::int32_t ApiCalls::device_of(CUcontext context) const {
  return probes_.device_of != nullptr ? probes_.device_of(context) : kHostDevice;
}

std::uint64_t ApiCalls::stream_id(CUcontext context, const void* stream, bool per_thread) const {
  return probes_.stream_id != nullptr
             ? probes_.stream_id(context, static_cast<CUstream>(const_cast<void*>(stream)), per_thread)
             : 0;
}

const std::vector<Param>& ApiCalls::params_of(CUfunction kernel) {
  LaunchCache& cache = launch_cache(this, generation_.load(std::memory_order_acquire));
  LaunchCache::Kernel& slot = cache.kernels[(reinterpret_cast<std::uintptr_t>(kernel) >> 4) % cache.kernels.size()];
  if (slot.function == kernel && slot.params != nullptr) return *slot.params;
  std::lock_guard<std::mutex> lock(kernels_mutex_);
  auto& params = kernel_params_[kernel];
  if (!params)
    params = std::make_unique<const std::vector<Param>>(pointer_params(kernel, probes_.param_info, probes_.kernel_param_info));
  slot = {kernel, params.get()};
  return *params;
}

std::int32_t ApiCalls::launch_device(CUcontext context) {
  LaunchCache& cache = launch_cache(this, generation_.load(std::memory_order_acquire));
  if (!cache.device_known || cache.context != context) {
    cache.context = context;
    cache.device = device_of(context);
    cache.device_known = true;
  }
  return cache.device;
}

void ApiCalls::forget_contexts_and_kernels() {
  std::lock_guard<std::mutex> lock(kernels_mutex_);
  for (auto& [kernel, params] : kernel_params_) retired_.push_back(std::move(params));
  kernel_params_.clear();
  generation_.store(next_generation(), std::memory_order_release);
}

void ApiCalls::module_unloading() { forget_contexts_and_kernels(); }

bool ApiCalls::reads_pageable_memory(std::int32_t device) {
  std::lock_guard<std::mutex> lock(devices_mutex_);
  return pageable_devices_.count(device) != 0;
}

// Records once which handle a stream of the trace has, so that what names
// streams by handle (PyTorch's allocator history) can be matched to it.
void ApiCalls::describe_stream(std::int32_t device, std::uint64_t id, const Launch& launch) {
  // A thread launches on one stream many times in a row: no lock for that.
  struct Last {
    const ApiCalls* calls = nullptr;
    std::int32_t device = kHostDevice;
    std::uint64_t id = 0;
  };
  thread_local Last last;
  if (last.calls == this && last.device == device && last.id == id) return;
  last = {this, device, id};
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    if (!described_streams_.emplace(device, id).second) return;
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
void ApiCalls::record_kernel_args(const Launch& launch, CUcontext context, std::uint64_t correlation,
                                  rec::StackId stack) {
  if (!options_.kernel_args || !launch.is_launch()) return;
  const std::vector<Param>& params = params_of(launch.function);
  if (params.empty()) return;
  const std::uint64_t time = rec::now_ns();
  const std::int32_t device = launch_device(context);
  std::uint64_t stream = 0;
  bool stream_known = false;
  for (const Param& p : params)
    for (std::uint32_t word = 0; word < p.words; ++word) {
      std::uint64_t value = 0;
      if (!param_value(launch, p, word, value)) break;
      // A struct's word may be any number: only memory the driver knows makes it a pointer.
      const MemKind memory =
          resolve_memory(options_.live_allocations ? &live_ : nullptr, value, p.aggregate, probes_.pointer_query);
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

void ApiCalls::record_out_of_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time,
                                    rec::StackId stack) {
  rec::OutOfMemoryEvent oom{.time_ns = time, .requested_bytes = e.bytes, .device = device_of(cb.context), .stack = stack};
  if (e.kind == MemKind::Pinned) {
    oom.device = kHostDevice;
  } else if (probes_.mem_get_info != nullptr) {
    std::size_t free = 0, total = 0;
    if (probes_.mem_get_info(&free, &total) == 0) oom.free_bytes = free, oom.capacity_bytes = total;
  }
  rec::record(oom);
}

void ApiCalls::record_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time,
                             rec::StackId stack) {
  const std::int32_t device = e.kind == MemKind::Pinned ? kHostDevice : device_of(cb.context);
  const std::uint64_t stream = e.stream_ordered ? stream_id(cb.context, e.stream, e.per_thread_stream) : 0;
  if (e.op == MemoryEffect::Op::Alloc && e.addr != 0 && kind_is_the_drivers(cb.functionName))
    live_.add(e.addr, e.bytes, e.kind);
  else if (e.op == MemoryEffect::Op::Free)
    live_.remove(e.addr, e.bytes);
  if (e.op == MemoryEffect::Op::Alloc)
    rec::record(rec::AllocEvent{.time_ns = time, .addr = e.addr, .bytes = e.bytes, .kind = e.kind, .device = device,
                                .stream = stream, .correlation = cb.correlationId, .stack = stack});
  else
    rec::record(rec::FreeEvent{.time_ns = time, .addr = e.addr, .bytes = e.bytes, .kind = e.kind, .device = device,
                               .stream = stream, .correlation = cb.correlationId, .stack = stack});
}

// Which stream an event was recorded on, for the queries that find it done.
// Events are recorded far more often than found done by a query (PyTorch's
// allocators record one per use): no driver call here.
void ApiCalls::note_event_recorded(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const EventUse use = event_use(domain, cbid, cb.functionParams);
  if (use.op != EventUse::Op::Record) return;
  std::lock_guard<std::mutex> lock(events_mutex_);
  event_streams_[use.event] = {cb.context, use.stream, use.per_thread_stream};
}

// A query that found its stream, or its event, done ordered the work of that
// stream before it: a Sync of the stream that did not block (PyTorch's
// allocators learn this way that another stream is done with a block).
void ApiCalls::record_completed_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb,
                                      std::uint64_t start, std::uint64_t end, rec::StackId stack) {
  RecordedOn queried;  // the stream whose work is known done, and its context
  std::uintptr_t event = 0;
  if (const QueriedStream q = queried_stream(domain, cbid, cb.functionParams); q.queried) {
    queried = {cb.context, q.stream, q.per_thread_stream};
  } else {
    const EventUse use = event_use(domain, cbid, cb.functionParams);
    if (use.op != EventUse::Op::Query) return;
    std::lock_guard<std::mutex> lock(events_mutex_);
    const auto it = event_streams_.find(use.event);
    if (it == event_streams_.end()) return;
    queried = it->second;
    event = reinterpret_cast<std::uintptr_t>(use.event);
  }
  // 0: the stream is gone; the query's call stays an unknown synchronisation.
  const std::uint64_t stream = stream_id(queried.context, queried.stream, queried.per_thread_stream);
  if (stream == 0) return;
  rec::record(rec::SyncEvent{.start_ns = start, .end_ns = end, .kind = SyncKind::Query,
                             .device = device_of(queried.context), .stream = stream, .event = event,
                             .correlation = cb.correlationId, .stack = stack});
}

void ApiCalls::on_return(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb, ApiKind kind,
                         std::int32_t status) {
  // An event recorded is noted, and the copy guard's business: a program that
  // records events all the time (PyTorch's allocators) pays no stack for it.
  if (kind == ApiKind::EventRecord && status == 0) {
    note_event_recorded(domain, cbid, cb);
    if (guard_ != nullptr) guard_->returned(domain, cbid, cb.functionParams, status, cb.correlationId);
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
    // A stack id too large for its slot is not kept: a record without a stack, never with another's.
    if (query || (stack != 0 && stack >> kStackBits == 0))
      calls_[cb.correlationId % kCallSlots].store(call_slot_value(cb.correlationId, query ? 0 : stack, query),
                                                  std::memory_order_release);
  }
  if (kind == ApiKind::Sync && status == 0) record_completed_query(domain, cbid, cb, start, end, stack);
  // A runtime launch's arguments come from the driver launch inside it.
  if (kind == ApiKind::Launch && status == 0)
    record_kernel_args(launch_of(domain, cbid, cb.functionParams), cb.context, cb.correlationId, stack);
  if (guard_ != nullptr) guard_->returned(domain, cbid, cb.functionParams, status, cb.correlationId);
}

void ApiCalls::on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const ApiKind kind = kind_of(domain, cbid);
  if (cb.callbackSite == CUPTI_API_ENTER) {
    if (runtime)
      ++t_runtime_depth;
    else if (t_runtime_depth > 0)
      return;
    // What the context held goes with it: a later allocation may reuse the addresses.
    if (ends_context(domain, cbid)) {
      live_.clear();
      forget_contexts_and_kernels();
    }
    if (kind != ApiKind::Other && cb.correlationData) *cb.correlationData = rec::now_ns();
    // Driver launches inside any other runtime call belong to no launch of ours.
    if (runtime) t_launch_correlation = kind == ApiKind::Launch ? cb.correlationId : 0;
    if (guard_ != nullptr) guard_->entered(domain, cbid, kind, cb.functionName, cb.functionParams);
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

// As nvidia-smi names the device: a MIG instance by its own UUID ("MIG-"),
// any other GPU by its GPU's.
std::string ApiCalls::uuid_of(int device) const {
  CUuuid own{}, gpu{};
  if (probes_.device_get_uuid == nullptr || probes_.device_get_uuid(&own, device) != 0) return {};
  const bool instance = probes_.device_get_gpu_uuid != nullptr && probes_.device_get_gpu_uuid(&gpu, device) == 0 &&
                        std::memcmp(own.bytes, gpu.bytes, sizeof own.bytes) != 0;
  unsigned char bytes[16];
  std::memcpy(bytes, own.bytes, sizeof bytes);
  return gpu_uuid_text(bytes, instance ? "MIG-" : "GPU-");
}

void ApiCalls::context_created(CUcontext context) {
  const std::int32_t ordinal = device_of(context);
  if (ordinal < 0) return;
  {
    std::lock_guard<std::mutex> lock(devices_mutex_);
    if (!described_devices_.insert(ordinal).second) return;
  }
  rec::DeviceInfo info{.id = ordinal};
  int device = 0;
  if (probes_.device_get && probes_.device_get(&device, ordinal) == 0) {
    std::array<char, 256> text{};
    if (probes_.device_get_name && probes_.device_get_name(text.data(), static_cast<int>(text.size()), device) == 0)
      info.name = rec::intern(text.data());
    std::size_t bytes = 0;
    if (probes_.device_total_mem && probes_.device_total_mem(&bytes, device) == 0) info.memory_bytes = bytes;
    if (const std::string uuid = uuid_of(device); !uuid.empty()) info.uuid = rec::intern(uuid);
    int pageable = 0;
    if (probes_.device_get_attribute &&
        probes_.device_get_attribute(&pageable, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, device) == 0 &&
        pageable != 0) {
      std::lock_guard<std::mutex> lock(devices_mutex_);
      pageable_devices_.insert(ordinal);
    }
  }
  rec::record(info);
}

rec::StackId ApiCalls::stack_of_call(std::uint32_t correlation) const {
  const std::uint64_t v = calls_[correlation % kCallSlots].load(std::memory_order_acquire);
  // Kept: a graph launch has many kernels, each asking.
  return v >> 32 == correlation && (v & 1) == 0 ? static_cast<rec::StackId>((v >> 1) & ((1u << kStackBits) - 1)) : 0;
}

bool ApiCalls::is_query_call(std::uint32_t correlation) {
  std::atomic<std::uint64_t>& slot = calls_[correlation % kCallSlots];
  std::uint64_t v = slot.load(std::memory_order_acquire);
  return v >> 32 == correlation && (v & 1) != 0 && slot.compare_exchange_strong(v, 0, std::memory_order_acq_rel);
}

}  // namespace gpudiag::cupti
