// libgpudiag_cupti.so: loaded by the CUDA driver through CUDA_INJECTION64_PATH
// (set by `gpudiag trace`). It records what the detectors need and nothing
// more, and changes nothing the traced program sees:
//   - API calls through CUPTI callbacks as they return (callbacks.cpp):
//     allocations and frees of every family with their stacks, out-of-memory
//     failures, the copy/memset/launch/sync calls, and any call that failed;
//   - GPU activity records: kernels, copies, memsets, synchronisations;
//   - the program's NVTX ranges, from CUPTI's marker records (NVTX reaches
//     CUPTI through nvtx_injection.cpp), which mark its iterations.
// CUPTI's MEMORY2 activity is not enabled: with it, cuMemFreeAsync of memory
// from cudaMalloc crashes inside the driver. Neither are the RUNTIME and
// DRIVER activity kinds, which record every one of a framework's calls.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "callbacks.h"
#include "cupti_convert.h"
#include "nvtx_ranges.h"

namespace gpudiag::cupti {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;

void warn(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "gpudiag: CUPTI %s failed: %s\n", what, text ? text : "unknown error");
}

const Hooks& hooks() {
  static const Hooks h{
      .intern = [](std::string_view s) { return rec::intern(s); },
      .stack_of = stack_of_call,
      .is_query = is_query_call,
  };
  return h;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// A range's start and end markers may arrive in different buffers.
struct Markers {
  std::mutex mutex;
  MarkerRanges ranges;
};

Markers& markers() {
  static Markers* m = new Markers();  // never destroyed: CUPTI may flush during exit
  return *m;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MARKER) {
      Markers& m = markers();
      const std::lock_guard lock(m.mutex);
      if (auto range = m.ranges.add(*reinterpret_cast<const CUpti_ActivityMarker2*>(record), hooks())) rec::record(*range);
      continue;
    }
    std::visit(
        [](const auto& e) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(e)>, std::monostate>) rec::record(e);
        },
        convert(record, hooks()));
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped != 0) rec::add_dropped(dropped);
  std::free(buffer);
}

uint64_t CUPTIAPI timestamp() { return rec::now_ns(); }

void flush_cupti() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  note_unguarded_copies();
}

}  // namespace
}  // namespace gpudiag::cupti

using namespace gpudiag::cupti;

// Called by the CUDA driver when it loads this library. Returns 1 on success;
// whatever fails is said on stderr and in the trace, and the program runs on
// untraced rather than stopped.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (!gpudiag::rec::enabled()) {
    std::fprintf(stderr, "gpudiag: CUPTI injection loaded but tracing is off (GPUDIAG_TRACE not set); not tracing\n");
    return 1;
  }
  // The first call says whether CUPTI works in this process at all (it does
  // not without a driver): one line then, not one per call.
  if (CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp); r != CUPTI_SUCCESS) {
    warn("cuptiActivityRegisterTimestampCallback", r);
    std::fprintf(stderr, "gpudiag: CUDA activity of this process is not traced\n");
    return 0;
  }
  if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    warn("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  // Marker records then name their thread as the recorder does, by its OS id.
  if (CUptiResult r = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM); r != CUPTI_SUCCESS)
    warn("cuptiSetThreadIdType", r);
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_MEMCPY,           CUPTI_ACTIVITY_KIND_MEMCPY2,
                                      CUPTI_ACTIVITY_KIND_MEMSET,           CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MARKER};
  for (CUpti_ActivityKind k : kinds)
    if (CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) warn(("enabling activity kind " + std::to_string(k)).c_str(), r);
  if (const std::string failed = enable_callbacks(); !failed.empty())
    std::fprintf(stderr, "gpudiag: CUPTI %s; allocations and API calls are not traced\n", failed.c_str());
  else
    gpudiag::rec::set_gpu_work_traced();
  // CUPTI keeps records until a buffer fills: flushed every 100 ms instead,
  // they reach the trace even when nothing runs at the end (_exit, SIGKILL).
  if (CUptiResult r = cuptiActivityFlushPeriod(100); r != CUPTI_SUCCESS) warn("cuptiActivityFlushPeriod", r);
  // On a fatal signal nothing of CUPTI is called: the signal may have hit a
  // thread inside the driver or CUPTI, whose locks a flush would wait on for
  // ever. What CUPTI still holds then (at most its last flush period) is lost.
  // Registered after the recorder's own atexit, so it runs first.
  std::atexit(flush_cupti);
  return 1;
}
