// What the injection library does with an API call CUPTI reports: the calls
// the detectors read and every failure become events; a launch's pointer
// arguments become KernelArg events; the copy guard sees every call. The
// driver and CUPTI are reached only through the functions in DriverProbes,
// so that tests and trace_bench drive the callback bodies with parameter
// structs and fakes, without a driver. callbacks.cpp is the CUPTI glue.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "copy_guard_calls.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/record.h"
#include "kernel_args.h"
#include "live_allocations.h"
#include "memory_calls.h"

namespace gpudiag::cupti {

// The driver's and CUPTI's answers, as functions: the injection library
// passes the libcuda's (looked up once, never from a callback) and CUPTI's;
// null ones are taken as "does not know".
struct DriverProbes {
  std::int32_t (*device_of)(CUcontext context) = nullptr;  // kHostDevice when unknown
  std::uint64_t (*stream_id)(CUcontext context, CUstream stream, bool per_thread) = nullptr;  // 0 when unknown
  PointerQueryFn pointer_query = nullptr;
  int (*mem_get_info)(std::size_t* free, std::size_t* total) = nullptr;
  ParamInfoFn param_info = nullptr;
  KernelParamInfoFn kernel_param_info = nullptr;
  int (*device_get)(int* device, int ordinal) = nullptr;
  int (*device_get_name)(char* name, int length, int device) = nullptr;
  int (*device_total_mem)(std::size_t* bytes, int device) = nullptr;
  int (*device_get_attribute)(int* value, int attribute, int device) = nullptr;
  // cuDeviceGetUuid_v2: the device's own UUID, a MIG instance's where it is
  // one; cuDeviceGetUuid: its GPU's, which differs only for a MIG instance.
  int (*device_get_uuid)(CUuuid* uuid, int device) = nullptr;
  int (*device_get_gpu_uuid)(CUuuid* uuid, int device) = nullptr;
};

struct ApiCallsOptions {
  // GPUDIAG_TRACE_KERNEL_ARGS=off: no KernelArg events (the evidence of
  // the rules on kernel arguments is then gone), to measure what resolving them costs.
  bool kernel_args = true;
  // Pointer arguments resolved from the allocations seen (LiveAllocations),
  // the driver asked only for the others. Off: every word is asked of the driver.
  bool live_allocations = true;
};

class ApiCalls {
 public:
  // `runtime_kinds` and `driver_kinds`: the ApiKind of each callback id of
  // that domain (callback_kinds). `guard`: the copy guard, or nullptr when off.
  ApiCalls(const DriverProbes& probes, std::vector<ApiKind> runtime_kinds, std::vector<ApiKind> driver_kinds,
           GuardCalls* guard, ApiCallsOptions options = {});

  // A runtime or driver API callback, at its entry or exit.
  void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb);
  // A context was created: its device is described once.
  void context_created(CUcontext context);
  // A module is unloading: a later kernel may get the handle of one of its kernels.
  void module_unloading();

  // The host stack captured when the call with this correlation id returned,
  // or 0: also when kCallSlots later analysed calls took its slot (never
  // another call's stack).
  rec::StackId stack_of_call(std::uint32_t correlation) const;
  // Whether the call with this correlation id was a stream or event query (true once per id).
  bool is_query_call(std::uint32_t correlation);

  // Calls whose stack or query mark is kept for their GPU records, which
  // CUPTI delivers within a flush period (100 ms): a PyTorch step makes a few
  // thousand analysed calls.
  static constexpr std::size_t kCallSlots = std::size_t{1} << 16;

  GuardCalls* guard() const { return guard_; }
  ApiKind kind_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const;

 private:
  struct RecordedOn {
    CUcontext context = nullptr;
    const void* stream = nullptr;
    bool per_thread_stream = false;
  };

  void on_return(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb, ApiKind kind,
                 std::int32_t status);
  void record_kernel_args(const Launch& launch, CUcontext context, std::uint64_t correlation, rec::StackId stack);
  std::string uuid_of(int device) const;  // "" when the driver does not say
  const std::vector<Param>& params_of(CUfunction kernel);
  std::int32_t launch_device(CUcontext context);  // device_of, remembered per thread
  void forget_contexts_and_kernels();
  bool reads_pageable_memory(std::int32_t device);
  void describe_stream(std::int32_t device, std::uint64_t id, const Launch& launch);
  void record_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time, rec::StackId stack);
  void record_out_of_memory(const CUpti_CallbackData& cb, const MemoryEffect& e, std::uint64_t time,
                            rec::StackId stack);
  void note_event_recorded(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb);
  void record_completed_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb,
                              std::uint64_t start, std::uint64_t end, rec::StackId stack);
  std::int32_t device_of(CUcontext context) const;
  std::uint64_t stream_id(CUcontext context, const void* stream, bool per_thread) const;

  DriverProbes probes_;
  std::vector<ApiKind> runtime_kinds_, driver_kinds_;
  GuardCalls* guard_;
  ApiCallsOptions options_;
  LiveAllocations live_;

  // Per analysed call, by correlation id modulo kCallSlots: {correlation:32,
  // stack:31, query:1}. Written by the calling thread, read by CUPTI's buffer
  // thread, with no lock: a slot holds one call's whole answer.
  std::unique_ptr<std::atomic<std::uint64_t>[]> calls_;
  std::mutex devices_mutex_;
  std::set<std::int32_t> described_devices_;
  // Devices whose kernels may read pageable host memory (HMM, ATS): there a
  // malloc'd pointer is no mistake.
  std::set<std::int32_t> pageable_devices_;
  // Streams whose handle the trace has (device, CUPTI stream id).
  std::mutex streams_mutex_;
  std::set<std::pair<std::int32_t, std::uint64_t>> described_streams_;
  // The stream each event was last recorded on, as the call named it: made
  // a device and stream id only for a query that finds the event done.
  std::mutex events_mutex_;
  std::unordered_map<const void*, RecordedOn> event_streams_;
  // Each kernel's pointer-sized parameters, found once; forgotten when a
  // module is unloaded, since a later kernel may get the same handle. Each
  // thread keeps the ones it used (params_of), valid while the generation
  // stays: the forgotten ones are kept (retired_), as a thread may still read
  // them. The generation also ends each thread's context -> device answer.
  std::mutex kernels_mutex_;
  std::unordered_map<CUfunction, std::unique_ptr<const std::vector<Param>>> kernel_params_;
  std::vector<std::unique_ptr<const std::vector<Param>>> retired_;
  std::atomic<std::uint64_t> generation_;
};

}  // namespace gpudiag::cupti
