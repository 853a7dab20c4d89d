// bench/trace: cost of recording an event (tracing off, on with one and two
// threads), import throughput on the real traces, and the ratio of a traced
// to an untraced gdrt UNet training run (on the cpu and the emu device).
// Goals (issue: tracer core): <= 30 ns per event, traced/untraced <= 1.03.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gpudiag/record.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "timed_run.h"
#include "torch_unet_overhead.h"
#ifdef GPUDIAG_CALLBACKS_BENCH
#include "callbacks_bench.h"
#endif

namespace rec = gpudiag::rec;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace gpudiag::bench;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU time of the calling thread: on a shared, loaded machine wall time
// mostly measures the other processes.
double process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Records n events with explicit timestamps (as CUPTI records arrive);
// returns the thread's CPU ns per event.
double record_n(std::uint64_t n, std::uint64_t base) {
  const double t0 = thread_cpu_ns();
  for (std::uint64_t i = 0; i < n; ++i)
    rec::emit(rec::AllocEvent{.time_ns = 1 + i, .addr = base + i, .bytes = 64, .kind = gpudiag::MemKind::Device, .device = 0});
  return (thread_cpu_ns() - t0) / static_cast<double>(n);
}

struct Cost {
  double thread_cpu = 0;   // CPU ns per event of a recording thread (the goal's measure)
  double process_cpu = 0;  // CPU ns per event of the whole process: writer thread and kernel included
  double wall = 0;         // wall ns per event of the recording phase
};

// Costs per event, averaged over `threads` threads recording concurrently.
Cost ns_per_event(int threads, std::uint64_t per_thread) {
  std::vector<double> cost(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  const auto wall0 = Clock::now();
  const double cpu0 = process_cpu_ns();
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&cost, t, per_thread] { cost[static_cast<std::size_t>(t)] = record_n(per_thread, std::uint64_t(t) << 40); });
  cost[0] = record_n(per_thread, 0);
  for (auto& th : pool) th.join();
  const double events = static_cast<double>(per_thread) * threads;
  Cost c;
  for (double x : cost) c.thread_cpu += x / threads;
  c.process_cpu = (process_cpu_ns() - cpu0) / events;
  c.wall = seconds_since(wall0) * 1e9 / events;
  return c;
}

double clock_ns() {
  constexpr int kCalls = 2'000'000;
  const double t0 = thread_cpu_ns();
  std::uint64_t sink = 0;
  for (int i = 0; i < kCalls; ++i) sink += rec::now_ns();
  if (sink == 42) std::printf(" ");
  return (thread_cpu_ns() - t0) / kCalls;
}

void recording_cost(std::uint64_t events) {
  std::printf("(CPU time of the recording threads; wall time on this shared machine is mostly other load)\n");
  const double off = ns_per_event(1, events).thread_cpu;
  std::printf("record, tracing off:          %6.2f ns/event (goal ~1 ns)\n", off);
  std::printf("timestamp (rec::now_ns):       %6.2f ns/call (added when the caller passes no time)\n", clock_ns());
  const std::string path = (fs::temp_directory_path() / ("gpudiag-bench-" + std::to_string(getpid()) + ".gdtrace")).string();
  // The speed of this shared VM drifts by a third within seconds: each
  // figure is the median of kTrials recordings, each into a fresh file.
  constexpr int kTrials = 5;
  for (int threads : {1, 2}) {
    std::vector<double> thread_cpu, process_cpu, wall;
    gpudiag::Trace last;
    for (int trial = 0; trial < kTrials; ++trial) {
      fs::remove(path);
      rec::Options options;
      options.stacks = false;
      if (!rec::start(path.c_str(), options)) {
        std::printf("record: cannot start a trace at %s\n", path.c_str());
        return;
      }
      const Cost on = ns_per_event(threads, events);
      rec::stop();
      thread_cpu.push_back(on.thread_cpu);
      process_cpu.push_back(on.process_cpu);
      wall.push_back(on.wall);
      if (trial == kTrials - 1) last = gpudiag::read_gdtrace(path);
    }
    const double cost = median(thread_cpu);
    std::printf("record, %d thread%s:            %6.2f ns/event per thread (goal 30 ns: ratio %.2f; trials %.1f-%.1f); "
                "last trial kept %zu, dropped %llu\n",
                threads, threads == 1 ? " " : "s", cost, cost / 30.0, *std::min_element(thread_cpu.begin(), thread_cpu.end()),
                *std::max_element(thread_cpu.begin(), thread_cpu.end()), last.allocs.size(),
                static_cast<unsigned long long>(last.dropped_events));
    std::printf("    whole process %6.2f ns/event CPU (writer thread: compression, checksums, write(2) into the page cache), "
                "%6.2f ns/event wall\n", median(process_cpu), median(wall));
  }
  {
    rec::Options options;
    rec::start(path.c_str(), options);
    constexpr int kEvents = 200000;
    double t0 = thread_cpu_ns();
    for (int i = 0; i < kEvents; ++i) rec::emit(rec::AllocEvent{.addr = std::uint64_t(i), .bytes = 1, .stack = rec::capture_stack()});
    const double stack_ns = (thread_cpu_ns() - t0) / kEvents;
    // What gdrt's kernel hook does per launch: two timestamps, the name interned.
    t0 = thread_cpu_ns();
    for (int i = 0; i < kEvents; ++i) {
      const std::uint64_t start = rec::now_ns();
      rec::emit(rec::KernelEvent{.start_ns = start, .end_ns = rec::now_ns(), .name = rec::intern("gdrt::conv2d_forward"), .device = 0});
    }
    const double kernel_ns = (thread_cpu_ns() - t0) / kEvents;
    rec::stop();
    std::printf("record + stack capture:        %6.0f ns/event CPU (stacks are opt-out: --stacks=off)\n", stack_ns);
    std::printf("kernel event as gdrt records:  %6.0f ns/event CPU (two timestamps and an interned name)\n", kernel_ns);
  }
  fs::remove(path);
}

// Imports every real trace (or only `only`) repeatedly for >= min_seconds.
void import_throughput(const std::string& only, double min_seconds) {
  std::vector<fs::path> files;
  if (!only.empty()) {
    files.push_back(only);
  } else {
    const fs::path dir = fs::path(GPUDIAG_SHARED_DATA_DIR) / "traces";
    if (!fs::is_directory(dir)) {
      std::printf("import: no real traces in %s\n", dir.c_str());
      return;
    }
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().string().ends_with(".json.gz") || e.path().string().ends_with(".json")) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  }
  std::printf("(import: CPU time of the process, which excludes waiting for a core on this loaded machine; wall in brackets)\n");
  for (const auto& f : files) {
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_ns();
    int runs = 0;
    std::size_t events = 0;
    do {
      events = gpudiag::load_trace(f.string()).event_count();
      ++runs;
    } while (seconds_since(t0) < min_seconds);
    const double wall = seconds_since(t0) / runs;
    const double cpu = (process_cpu_ns() - cpu0) / 1e9 / runs;
    std::printf("import %-44s %8zu events  %7.1f ms CPU [%7.1f ms wall]  %6.2f M events/s\n", f.filename().c_str(), events,
                cpu * 1e3, wall * 1e3, static_cast<double>(events) / cpu / 1e6);
  }
}

// A gdrt UNet training run untraced and traced (GPUDIAG_TRACE, as `gpudiag
// trace` sets it: gdrt's hooks record every allocation, free, copy and
// kernel), interleaved `rounds` times; medians of CPU and wall time.
void unet_overhead(int rounds, const std::string& device) {
  // GPUDIAG_BENCH_TRAIN_UNET: another train_unet binary (e.g. one built
  // from another revision of the runtime); LD_LIBRARY_PATH then picks the
  // recorder it loads.
  const char* other = std::getenv("GPUDIAG_BENCH_TRAIN_UNET");
  const std::string train = other != nullptr && *other != '\0' ? other : GPUDIAG_TRAIN_UNET;
  if (train.empty() || !fs::exists(train)) {
    std::printf("traced/untraced UNet: not measured (build the train_unet target first)\n");
    return;
  }
  // One thread and no loader workers: the run's CPU time is then its work,
  // not spinning or waiting for cores that other jobs hold.
  // Eight epochs: in a run of two, the process's start (loading libraries,
  // oneDNN's first primitives) was a third of it and its noise hid the
  // recording's cost.
  const std::vector<std::string> args = {train, "--device", device, "--epochs", "8", "--train", "128", "--val", "16",
                                         "--threads", "1", "--workers", "0", "--checkpoint", ""};
  const std::string out = (fs::temp_directory_path() / ("gpudiag-bench-unet-" + std::to_string(getpid()) + ".gdtrace")).string();
  struct Variant {
    const char* name;
    std::vector<std::string> env;
    std::vector<double> wall, cpu;
    std::uintmax_t trace_bytes = 0;
  };
  std::vector<Variant> variants = {
      {"untraced", {}, {}, {}},
      {"traced (stacks on, the default)", {"GPUDIAG_TRACE=" + out, "GPUDIAG_TRACE_STACKS=on"}, {}, {}},
      {"traced, --stacks=off", {"GPUDIAG_TRACE=" + out, "GPUDIAG_TRACE_STACKS=off"}, {}, {}},
      {"traced, uncompressed", {"GPUDIAG_TRACE=" + out, "GPUDIAG_TRACE_STACKS=on", "GPUDIAG_TRACE_COMPRESS=off"}, {}, {}}};
  std::size_t events = 0;
  // The order rotates each round: none of the variants always runs first,
  // after the machine was idle, or last.
  for (int round = 0; round < rounds; ++round)
    for (std::size_t k = 0; k < variants.size(); ++k) {
      auto& v = variants[(k + static_cast<std::size_t>(round)) % variants.size()];
      const Run r = timed_run(args, v.env);
      if (r.status != 0) {
        std::printf("traced/untraced UNet: `train_unet --device %s` (%s) exited with %d\n", device.c_str(), v.name,
                    r.status);
        return;
      }
      v.wall.push_back(r.wall);
      v.cpu.push_back(r.cpu);
      if (!v.env.empty()) {
        events = gpudiag::read_gdtrace(out).event_count();
        v.trace_bytes = fs::file_size(out);
      }
    }
  fs::remove(out);
  std::printf("traced/untraced UNet training run on the %s device: 8 epochs of 128 32x32 images,\n"
              "  --threads 1 --workers 0, %d interleaved runs each, %zu events recorded per traced run\n",
              device.c_str(), rounds, events);
  // Other jobs on the machine only ever add time: the minimum is the
  // steadiest estimate of a run's own cost, the median shows the spread.
  auto least = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  const double cpu0 = median(variants[0].cpu), wall0 = median(variants[0].wall), min0 = least(variants[0].cpu);
  for (const auto& v : variants) {
    const double cpu = median(v.cpu), wall = median(v.wall), min = least(v.cpu);
    std::printf("  %-32s CPU min %6.3f s (ratio %.3f), median %6.3f s (ratio %.3f); wall median %6.3f s (ratio %.3f)%s\n",
                v.name, min, min / min0, cpu, cpu / cpu0, wall, wall / wall0, &v == &variants[0] ? "" : "  goal <= 1.03");
    if (v.trace_bytes != 0)
      std::printf("  %-32s trace %.2f MB, %.1f bytes an event\n", "", static_cast<double>(v.trace_bytes) / 1e6,
                  static_cast<double>(v.trace_bytes) / static_cast<double>(std::max<std::size_t>(events, 1)));
  }
}

}  // namespace

// trace_bench                 every measurement
// trace_bench record [EVENTS] recording cost only (EVENTS per thread, default 4M)
// trace_bench import [FILE]   one import per trace (or of FILE): for profiling under callgrind
// trace_bench unet [ROUNDS]   traced/untraced UNet training run only
// trace_bench gpu [ROUNDS [VARIANT...]]  a PyTorch UNet step on a GPU: untraced, traced with each part off in
//                             turn, under torch.profiler (VARIANT: run only these, see torch_unet_overhead.h)
// trace_bench callbacks [--quick]  the CUPTI callback bodies on the CPU, ns per part (not in "every measurement":
//                             it needs no GPU but is a profile of the parts, not a goal)
int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "callbacks") {
#ifdef GPUDIAG_CALLBACKS_BENCH
    const bool quick = argc > 2 && std::string(argv[2]) == "--quick";
    if (argc > 3 || (argc > 2 && !quick)) {
      std::fprintf(stderr, "usage: trace_bench callbacks [--quick]\n");
      return 2;
    }
    return gpudiag::bench::callbacks_bench(quick);
#else
    std::printf("trace_bench callbacks: not built (gpudiag was built without CUDA: no CUPTI headers)\n");
    return 0;
#endif
  }
  if (what.empty()) recording_cost(4'000'000);
  if (what == "record") recording_cost(argc > 2 ? std::stoull(argv[2]) : 4'000'000);
  if (what.empty()) import_throughput("", 1.0);
  if (what == "import") import_throughput(argc > 2 ? argv[2] : "", 0.0);
  // On cpu the runtime's hooks record allocations and kernels; on emu also
  // each launch's pointer arguments, copies as queued and run, and syncs.
  for (const char* device : {"cpu", "emu"}) {
    if (what.empty()) unet_overhead(11, device);
    if (what == "unet") unet_overhead(argc > 2 ? std::stoi(argv[2]) : 11, device);
  }
  if (what.empty()) torch_unet_overhead(5);
  for (int i = 3; what == "gpu" && i < argc; ++i)
    if (!is_gpu_variant(argv[i])) {
      std::fprintf(stderr, "trace_bench gpu: unknown variant %s (full, stacks, guard, args, deny, analysed, nocallbacks, profiler)\n", argv[i]);
      return 2;
    }
  const int gpu_rounds = what == "gpu" && argc > 2 ? std::atoi(argv[2]) : 5;
  if (gpu_rounds < 1) {
    std::fprintf(stderr, "trace_bench gpu: ROUNDS must be a positive number, not %s\n", argv[2]);
    return 2;
  }
  if (what == "gpu") torch_unet_overhead(gpu_rounds, std::vector<std::string>(argv + std::min(argc, 3), argv + argc));
  if (!what.empty() && what != "record" && what != "import" && what != "unet" && what != "gpu") {
    std::fprintf(stderr, "usage: trace_bench [record [EVENTS] | import [FILE] | unet [ROUNDS] | gpu [ROUNDS [VARIANT...]] | callbacks [--quick]]\n");
    return 2;
  }
}
