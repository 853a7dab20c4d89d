// trace_bench callbacks (callbacks_bench.h). Every part is driven through the
// same entry CUPTI calls (ApiCalls::on_api), with the recorder on and writing
// a trace, and timed as CPU time of this thread (the recorder's writer thread
// is not counted: it does not hold up the program's calls).
#include "callbacks_bench.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "api_calls.h"
#include "callback_set.h"
#include "copy_guard_calls.h"
#include "timed_run.h"

namespace gpudiag::bench {
namespace {

namespace fs = std::filesystem;
using namespace gpudiag::cupti;

// ---- the fake driver: what a launch's pointers point into, counted ----
constexpr std::uint64_t kDeviceBase = 0x7f1200000000ull, kDeviceBytes = 1ull << 32;
std::uint64_t g_pointer_queries = 0, g_guard_probes = 0;
std::uint64_t g_query_spin_ns = 0;  // what each cuPointerGetAttributes costs the fake
std::uint64_t g_pinned_lo = 0, g_pinned_hi = 0;

void spin(std::uint64_t ns) {
  const std::uint64_t until = rec::now_ns() + ns;
  while (rec::now_ns() < until) {
  }
}

DriverMemory fake_pointer_query(std::uint64_t address) {
  ++g_pointer_queries;
  if (g_query_spin_ns != 0) spin(g_query_spin_ns);
  if (address >= kDeviceBase && address < kDeviceBase + kDeviceBytes) return DriverMemory::Device;
  if (address >= g_pinned_lo && address < g_pinned_hi) return DriverMemory::Host;
  return DriverMemory::NotKnown;
}
std::int32_t fake_device_of(CUcontext) { return 0; }
std::uint64_t fake_stream_id(CUcontext, CUstream, bool) { return 13; }

// A PyTorch elementwise kernel's shape: (T* out, T* in, Array<char*, 3> data,
// OffsetCalculator (96 bytes: sizes and strides), int64 n).
CUresult fake_param_info(CUfunction, std::size_t index, std::size_t* offset, std::size_t* size) {
  constexpr std::size_t offsets[] = {0, 8, 16, 40, 136}, sizes[] = {8, 8, 24, 96, 8};
  if (index >= 5) return CUDA_ERROR_INVALID_VALUE;
  *offset = offsets[index];
  *size = sizes[index];
  return CUDA_SUCCESS;
}

CUresult fake_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  ++g_guard_probes;
  const bool device = ptr >= kDeviceBase && ptr < kDeviceBase + kDeviceBytes;
  const bool pinned = ptr >= g_pinned_lo && ptr < g_pinned_hi;
  if (!device && !pinned) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    *static_cast<unsigned*>(data) = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  else if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED)
    *static_cast<bool*>(data) = false;
  return CUDA_SUCCESS;
}
CUresult fake_stream_flags(CUstream, unsigned* flags) {
  ++g_guard_probes;
  *flags = CU_STREAM_NON_BLOCKING;
  return CUDA_SUCCESS;
}
CUresult fake_capturing(CUstream, CUstreamCaptureStatus* status) {
  ++g_guard_probes;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
void no_sink(const rec::GuardedAccessRecord&, const void*) noexcept {}

DriverProbes fake_driver() {
  return {.device_of = fake_device_of, .stream_id = fake_stream_id, .pointer_query = fake_pointer_query,
          .param_info = fake_param_info};
}

// ---- calls as CUPTI hands them over ----
struct Call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* name;
  const void* params;
  std::int32_t status = 0;
  const char* symbol = nullptr;
  std::uint64_t correlation_data = 0;
  std::uint32_t correlation = 0;

  void on(ApiCalls& calls, CUpti_ApiCallbackSite site) {
    CUpti_CallbackData cb{};
    cb.callbackSite = site;
    cb.functionName = name;
    cb.functionParams = params;
    cb.functionReturnValue = &status;
    cb.symbolName = symbol;
    cb.correlationId = correlation;
    cb.correlationData = &correlation_data;
    calls.on_api(domain, cbid, cb);
  }
  void enter(ApiCalls& calls) { on(calls, CUPTI_API_ENTER); }
  void exit(ApiCalls& calls) { on(calls, CUPTI_API_EXIT); }
  void both(ApiCalls& calls) {
    ++correlation;
    enter(calls);
    exit(calls);
  }
};

constexpr auto R = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto D = CUPTI_CB_DOMAIN_DRIVER_API;

// The structs of one step's calls, built once, as the program's would be.
struct Calls {
  // The launch: its arguments.
  std::uint64_t out = kDeviceBase + 0x1000, in = kDeviceBase + 0x200000;
  std::uint64_t data[3] = {kDeviceBase + 0x400000, kDeviceBase + 0x600000, kDeviceBase + 0x800000};
  std::uint64_t offsets[12] = {128, 128, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t n = 16384;
  void* args[5] = {&out, &in, data, offsets, &n};
  int stub = 0;
  cudaLaunchKernel_v7000_params runtime_launch_params{};
  cuLaunchKernel_params driver_launch_params{};
  Call runtime_launch{R, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &runtime_launch_params, 0,
                      "vectorized_elementwise_kernel"};
  Call driver_launch{D, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &driver_launch_params};
  // What comes with each launch (the H100 UNet trace: 5 cudaGetDevice, 1
  // cudaGetLastError, 0.7 cudaPeekAtLastError per launch).
  int device = 0;
  cudaGetDevice_v3020_params get_device_params{&device};
  Call get_device{R, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", &get_device_params};
  Call get_last_error{R, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, "cudaGetLastError", nullptr};
  Call peek_error{R, CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, "cudaPeekAtLastError", nullptr};
  // A copy into pinned memory on a non-blocking stream, and the sync that releases it.
  cudaMemcpyAsync_v3020_params copy_params{};
  Call copy{R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &copy_params};
  cudaMemcpyAsync_v3020_params upload_params{};
  Call upload{R, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", &upload_params};
  cudaStreamSynchronize_v3020_params sync_params{};
  Call sync{R, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize", &sync_params};
  cudaEventRecord_v3020_params event_params{};
  Call event_record{R, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord", &event_params};
  // The device memory every pointer argument points into, allocated once (a caching allocator's segment).
  void* segment = reinterpret_cast<void*>(kDeviceBase);
  cudaMalloc_v3020_params malloc_params{&segment, kDeviceBytes};
  Call malloc{R, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", &malloc_params};

  explicit Calls(void* pinned, std::size_t bytes) {
    const auto stream = reinterpret_cast<cudaStream_t>(0x5100);
    runtime_launch_params.func = &stub;
    runtime_launch_params.args = args;
    runtime_launch_params.stream = stream;
    driver_launch_params.f = reinterpret_cast<CUfunction>(0x1234);
    driver_launch_params.kernelParams = args;
    driver_launch_params.hStream = reinterpret_cast<CUstream>(stream);
    copy_params = {pinned, reinterpret_cast<const void*>(kDeviceBase), bytes, cudaMemcpyDeviceToHost, stream};
    upload_params = {reinterpret_cast<void*>(kDeviceBase), pinned, bytes, cudaMemcpyHostToDevice, stream};
    sync_params = {stream};
    event_params = {reinterpret_cast<cudaEvent_t>(0xe100), stream};
  }

  void launch(ApiCalls& calls) {
    ++runtime_launch.correlation;
    driver_launch.correlation = runtime_launch.correlation + 1;
    runtime_launch.enter(calls);
    driver_launch.enter(calls);
    driver_launch.exit(calls);
    runtime_launch.exit(calls);
  }
  // One launch with the calls that come with it.
  void launch_with_mix(ApiCalls& calls, std::uint64_t i) {
    for (int k = 0; k < 5; ++k) get_device.both(calls);
    get_last_error.both(calls);
    if (i % 10 < 7) peek_error.both(calls);
    launch(calls);
  }
};

struct Bench {
  int iterations;
  int trials;

  // Median over trials of the thread's CPU ns per call of f(i).
  double ns_per(const std::function<void(std::uint64_t)>& f, int n = 0) const {
    const int calls = n > 0 ? n : iterations;
    std::vector<double> per_trial;
    std::uint64_t i = 0;
    for (int t = 0; t < trials; ++t) {
      const double t0 = thread_cpu_ns();
      for (int k = 0; k < calls; ++k) f(i++);
      per_trial.push_back((thread_cpu_ns() - t0) / calls);
    }
    return median(per_trial);
  }
};

// ---- unwinding from a known depth: two functions, so that the path down
// (which one was called at each of the innermost levels) makes distinct stacks ----
rec::StackId descend_b(int depth, std::uint64_t path);
[[gnu::noinline]] rec::StackId descend_a(int depth, std::uint64_t path) {
  rec::StackId s = depth == 0 ? rec::capture_stack() : (path & 1) ? descend_a(depth - 1, path >> 1) : descend_b(depth - 1, path >> 1);
  asm volatile("" : "+r"(s));  // no tail call: each level keeps its frame
  return s;
}
[[gnu::noinline]] rec::StackId descend_b(int depth, std::uint64_t path) {
  rec::StackId s = depth == 0 ? rec::capture_stack() : (path & 1) ? descend_a(depth - 1, path >> 1) : descend_b(depth - 1, path >> 1);
  asm volatile("" : "+r"(s));
  return s;
}
// `path` picks the innermost levels (the low bits are used last).
rec::StackId stack_at(int depth, std::uint64_t path) {
  std::uint64_t reversed = 0;
  for (int b = 0; b < depth && b < 64; ++b) reversed |= ((path >> b) & 1) << (depth - 1 - b);
  return descend_a(depth, reversed);
}

bool start_recording(const std::string& path, bool stacks) {
  fs::remove(path);
  rec::Options options;
  options.stacks = stacks;
  if (rec::start(path.c_str(), options)) return true;
  std::printf("trace_bench callbacks: cannot start a trace at %s\n", path.c_str());
  return false;
}

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

int callbacks_bench(bool quick) {
  const Bench b{quick ? 2000 : 200000, quick ? 3 : 5};
  const Bench slow{quick ? 500 : 20000, quick ? 3 : 5};  // parts of microseconds
  const std::uint64_t spin_ns = env_number("GPUDIAG_BENCH_POINTER_QUERY_NS", 300);
  const std::string path = (fs::temp_directory_path() / ("gpudiag-bench-callbacks-" + std::to_string(getpid()) + ".gdtrace")).string();
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* pinned = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pinned == MAP_FAILED) {
    std::printf("trace_bench callbacks: cannot map memory for the copy guard\n");
    return 1;
  }
  g_pinned_lo = reinterpret_cast<std::uint64_t>(pinned), g_pinned_hi = g_pinned_lo + 4 * page;
  Calls c(pinned, page);
  const std::vector<ApiKind> runtime_kinds = callback_kinds(R), driver_kinds = callback_kinds(D);
  CopyGuard copy_guard{no_sink};
  GuardCalls guard_calls{copy_guard, GuardProbes{fake_attribute, fake_stream_flags, fake_capturing},
                         []() noexcept { return true; }};
  // Those that resolve pointers from the live allocations first saw the device memory allocated.
  const ApiCallsOptions driver_only{.live_allocations = false};
  ApiCalls plain(fake_driver(), runtime_kinds, driver_kinds, nullptr);
  ApiCalls plain_driver_only(fake_driver(), runtime_kinds, driver_kinds, nullptr, driver_only);
  ApiCalls guarded(fake_driver(), runtime_kinds, driver_kinds, &guard_calls);
  ApiCalls guarded_driver_only(fake_driver(), runtime_kinds, driver_kinds, &guard_calls, driver_only);
  ApiCalls no_args(fake_driver(), runtime_kinds, driver_kinds, nullptr, ApiCallsOptions{.kernel_args = false});

  std::printf("trace_bench callbacks: the CUPTI callback bodies on the CPU, driven with parameter structs and a fake\n"
              "  driver, recorder on; CPU ns of this thread per call, median of %d trials of %d calls (%d for parts of\n"
              "  microseconds)\n",
              b.trials, b.iterations, slow.iterations);
  if (!start_recording(path, true)) return 1;
  c.malloc.both(plain);
  c.malloc.both(guarded);

  // (a) dispatch of a call nobody analyses.
  std::printf("dispatch  uninteresting call (cudaGetDevice, enter+exit), guard off: %8.1f ns\n",
              b.ns_per([&](std::uint64_t) { c.get_device.both(plain); }));
  std::printf("dispatch  uninteresting call (cudaGetDevice, enter+exit), guard on:  %8.1f ns\n",
              b.ns_per([&](std::uint64_t) { c.get_device.both(guarded); }));

  // (b) argument resolution: the driver launch inside an open runtime launch.
  const auto driver_launches = [&](ApiCalls& calls, const Bench& bench) {
    ++c.runtime_launch.correlation;  // 0 would be no launch
    c.runtime_launch.enter(calls);
    const std::uint64_t q0 = g_pointer_queries;
    const double ns = bench.ns_per([&](std::uint64_t) {
      c.driver_launch.enter(calls);
      c.driver_launch.exit(calls);
    });
    const double queries = static_cast<double>(g_pointer_queries - q0) / (bench.iterations * bench.trials);
    c.runtime_launch.exit(calls);
    return std::pair{ns, queries};
  };
  const auto off = driver_launches(no_args, b);
  std::printf("args      driver launch (enter+exit), kernel args off:              %8.1f ns\n", off.first);
  for (auto [calls, what] : {std::pair{&plain_driver_only, "driver only"}, std::pair{&plain, "live map   "}}) {
    const auto zero = driver_launches(*calls, b);
    std::printf("args      driver launch, zero-cost driver, %s:             %8.1f ns  (%.2f driver queries per launch)\n",
                what, zero.first, zero.second);
  }
  g_query_spin_ns = spin_ns;
  for (auto [calls, what] : {std::pair{&plain_driver_only, "driver only"}, std::pair{&plain, "live map   "}}) {
    const auto spinning = driver_launches(*calls, slow);
    std::printf("args      driver launch, driver spinning %4llu ns/query, %s: %8.1f ns  (%.2f driver queries per launch)\n",
                static_cast<unsigned long long>(spin_ns), what, spinning.first, spinning.second);
  }
  g_query_spin_ns = 0;
  std::printf("          (GPUDIAG_BENCH_POINTER_QUERY_NS sets the spin: the real cuPointerGetAttributes time is a GPU's to measure)\n");

  // (c) unwind.
  for (int depth : {16, 32, 64, 100})
    std::printf("unwind    capture_stack, %3d frames deep (+ the bench's own), cache hit:  %8.1f ns\n", depth,
                slow.ns_per([&](std::uint64_t) { stack_at(depth, 0); }));
  for (int depth : {16, 64}) {
    // 256 paths in turn: each stack known to the recorder, none in the thread's 64-slot cache.
    for (std::uint64_t p = 0; p < 256; ++p) stack_at(depth, p);
    std::printf("unwind    capture_stack, %3d frames deep, thread cache miss (known stack): %8.1f ns\n", depth,
                slow.ns_per([&](std::uint64_t i) { stack_at(depth, i % 256); }));
    std::uint64_t fresh = (static_cast<std::uint64_t>(depth) << 40) + 1000;
    std::printf("unwind    capture_stack, %3d frames deep, new stack:                   %8.1f ns\n", depth,
                slow.ns_per([&](std::uint64_t) { stack_at(depth, fresh++); }));
  }

  // (d) recording.
  std::printf("record    rec::now_ns:                                             %8.1f ns\n",
              b.ns_per([&](std::uint64_t i) {
                volatile std::uint64_t t = rec::now_ns();
                (void)t, (void)i;
              }));
  std::printf("record    ApiEvent:                                                %8.1f ns\n",
              b.ns_per([&](std::uint64_t i) { rec::record(rec::ApiEvent{.start_ns = 1 + i, .end_ns = 2 + i, .correlation = i}); }));
  std::printf("record    KernelArgEvent:                                          %8.1f ns\n",
              b.ns_per([&](std::uint64_t i) {
                rec::record(rec::KernelArgEvent{.time_ns = 1 + i, .value = kDeviceBase, .memory = MemKind::Device, .correlation = i});
              }));
  const double analysed_on = b.ns_per([&](std::uint64_t) { c.upload.both(plain); });
  std::printf("record    stack_of_call (CUPTI's buffer thread, once per GPU record):      %8.1f ns\n",
              b.ns_per([&](std::uint64_t i) {
                volatile rec::StackId id = plain.stack_of_call(static_cast<std::uint32_t>(c.upload.correlation - i % 64));
                (void)id;
              }));

  // (e) the copy guard.
  const std::uint64_t p0 = g_guard_probes;
  const double guarded_pair = slow.ns_per([&](std::uint64_t) {
    c.copy.both(guarded);
    c.sync.both(guarded);
  });
  const double probes_per_copy = static_cast<double>(g_guard_probes - p0) / (slow.iterations * slow.trials);
  const double unguarded_pair = slow.ns_per([&](std::uint64_t) {
    c.copy.both(plain);
    c.sync.both(plain);
  });
  std::printf("guard     DtoH async copy + its stream sync (enter+exit each): guard on %8.1f ns, off %8.1f ns\n"
              "          (%.2f driver probes per pair: memory types, capture status, stream flags)\n",
              guarded_pair, unguarded_pair, probes_per_copy);
  std::printf("guard     cudaEventRecord (enter+exit): guard on %8.1f ns, off %8.1f ns\n",
              b.ns_per([&](std::uint64_t) { c.event_record.both(guarded); }),
              b.ns_per([&](std::uint64_t) { c.event_record.both(plain); }));

  // (f) the whole launch, with the calls that come with it; the two ways
  // alternate trial by trial, as this machine's speed drifts.
  {
    ApiCalls* ways[2] = {&guarded_driver_only, &guarded};
    const char* names[2] = {"driver only", "live map"};
    std::vector<double> ns[2];
    std::uint64_t queries[2] = {0, 0}, i = 0;
    for (int t = 0; t < b.trials; ++t)
      for (int w = 0; w < 2; ++w) {
        const std::uint64_t q0 = g_pointer_queries;
        const double t0 = thread_cpu_ns();
        for (int k = 0; k < b.iterations; ++k) c.launch_with_mix(*ways[w], i++);
        ns[w].push_back((thread_cpu_ns() - t0) / b.iterations);
        queries[w] += g_pointer_queries - q0;
      }
    for (int w = 0; w < 2; ++w) {
      std::printf("launch    cudaLaunchKernel with its call mix (5 cudaGetDevice, 1 cudaGetLastError, 0.7\n"
                  "          cudaPeekAtLastError), stacks and guard on, zero-cost driver, %s: %8.1f ns per launch\n",
                  names[w], median(ns[w]));
      std::printf("launch    driver queries per launch, %s: %.2f cuPointerGetAttributes (counted by the fake driver)\n",
                  names[w], static_cast<double>(queries[w]) / (b.iterations * b.trials));
    }
  }
  rec::stop();

  if (!start_recording(path, false)) return 1;
  const double analysed_off = b.ns_per([&](std::uint64_t) { c.upload.both(plain); });
  const double whole_no_stacks = b.ns_per([&](std::uint64_t i) { c.launch_with_mix(guarded, i); });  // live map
  rec::stop();
  std::printf("record    analysed call (cudaMemcpyAsync HtoD, enter+exit, guard off): stacks on %8.1f ns, off %8.1f ns\n"
              "          (stacks on adds the unwind and the correlation-to-stack table insert)\n",
              analysed_on, analysed_off);
  std::printf("launch    the same with the live map and stacks off:               %8.1f ns per launch\n", whole_no_stacks);
  std::printf("Only a GPU can measure: CUPTI's own dispatch of each callback (enter and exit, before and after\n"
              "  these bodies), the real cost of cuPointerGetAttributes, cuptiGetStreamIdEx and cuptiGetDeviceId (faked\n"
              "  here), and how much of a PyTorch step the host spends in calls: `trace_bench gpu` measures those.\n");
  fs::remove(path);
  munmap(pinned, 4 * page);
  return 0;
}

}  // namespace gpudiag::bench
