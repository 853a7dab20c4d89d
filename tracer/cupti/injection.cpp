// libgpudiag_cupti.so: loaded by the CUDA driver through CUDA_INJECTION64_PATH
// (set by `gpudiag trace`). It enables CUPTI activity tracing, captures host
// stacks at the entry of allocation, free, copy and launch calls, and turns
// every completed record into a recording-API event of this process's trace.
#include <cupti.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cupti_convert.h"

namespace gpudiag::cupti {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;
constexpr std::size_t kMaxPendingStacks = 1u << 16;

CUpti_SubscriberHandle g_subscriber = nullptr;
std::mutex g_stacks_mutex;
std::unordered_map<std::uint32_t, rec::StackId> g_stacks;  // correlation -> stack at API entry
std::atomic<bool> g_flushing{false};

void warn(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "gpudiag: CUPTI %s failed: %s\n", what, text ? text : "unknown error");
}

rec::StackId take_stack(std::uint32_t correlation) {
  std::lock_guard<std::mutex> lock(g_stacks_mutex);
  auto it = g_stacks.find(correlation);
  if (it == g_stacks.end()) return 0;
  return it->second;  // kept: API and GPU records of one call share it
}

const Hooks& hooks() {
  static const Hooks h{
      .intern = [](std::string_view s) { return rec::intern(s); },
      .api_name =
          [](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) -> const char* {
        const char* name = nullptr;
        return cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS ? name : nullptr;
      },
      .stack_of = take_stack,
  };
  return h;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    std::visit(
        [](const auto& e) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(e)>, std::monostate>) rec::record(e);
        },
        convert(record, hooks()));
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped != 0) rec::add_dropped(dropped);
  std::free(buffer);
  // Once its records are in, stacks of completed calls are no longer needed.
  std::lock_guard<std::mutex> lock(g_stacks_mutex);
  if (g_stacks.size() > kMaxPendingStacks) g_stacks.clear();
}

bool wants_stack(const char* name) {
  static const char* kPrefixes[] = {"cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaMemcpy", "cudaMemset", "cudaLaunch",
                                    "cuMemAlloc", "cuMemFree", "cuMemcpy", "cuMemset", "cuLaunch"};
  for (const char* p : kPrefixes)
    if (std::strncmp(name, p, std::strlen(p)) == 0) return true;
  return false;
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  const rec::StackId s = rec::capture_stack(2);
  if (s == 0) return;
  std::lock_guard<std::mutex> lock(g_stacks_mutex);
  g_stacks[cb->correlationId] = s;
}

void enable_stack_callbacks() {
  if (!rec::stacks_enabled()) return;
  if (CUptiResult r = cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr); r != CUPTI_SUCCESS) {
    warn("cuptiSubscribe", r);
    return;
  }
  const std::pair<CUpti_CallbackDomain, CUpti_CallbackId> domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE}, {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
  for (const auto& [domain, count] : domains) {
    for (CUpti_CallbackId id = 1; id < count; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (wants_stack(name)) cuptiEnableCallback(1, g_subscriber, domain, id);
    }
  }
}

uint64_t CUPTIAPI timestamp() { return rec::now_ns(); }

void flush_cupti() {
  if (g_flushing.exchange(true)) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  g_flushing.store(false);
}

struct sigaction g_previous[65];

// Best effort on a crash: CUPTI's pending records into our buffers, then the
// recorder's own handler (installed before ours) writes them with write(2).
void on_crash(int sig, siginfo_t* info, void* context) {
  flush_cupti();
  sigaction(sig, &g_previous[sig], nullptr);
  if (g_previous[sig].sa_flags & SA_SIGINFO) {
    if (g_previous[sig].sa_sigaction) g_previous[sig].sa_sigaction(sig, info, context);
  } else if (g_previous[sig].sa_handler != SIG_DFL && g_previous[sig].sa_handler != SIG_IGN) {
    g_previous[sig].sa_handler(sig);
  } else {
    raise(sig);
  }
}

void install_crash_flush() {
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGINT, SIGTERM}) {
    struct sigaction sa {};
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

}  // namespace
}  // namespace gpudiag::cupti

using namespace gpudiag::cupti;

// Called by the CUDA driver when it loads this library. Returns 1 on success.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (!gpudiag::rec::enabled()) {
    std::fprintf(stderr, "gpudiag: CUPTI injection loaded but tracing is off (GPUDIAG_TRACE not set); not tracing\n");
    return 1;
  }
  if (CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp); r != CUPTI_SUCCESS) warn("timestamp callback", r);
  if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    warn("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                                      CUPTI_ACTIVITY_KIND_MEMSET,
                                      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                      CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_OVERHEAD};
  for (CUpti_ActivityKind k : kinds)
    if (CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) warn(("enabling activity kind " + std::to_string(k)).c_str(), r);
  enable_stack_callbacks();
  // CUPTI keeps records until a buffer fills: flushed every 100 ms instead,
  // they reach the trace even when nothing runs at the end (_exit, SIGKILL).
  if (CUptiResult r = cuptiActivityFlushPeriod(100); r != CUPTI_SUCCESS) warn("cuptiActivityFlushPeriod", r);
  install_crash_flush();
  // Registered after the recorder's own atexit, so it runs first.
  std::atexit(flush_cupti);
  return 1;
}
