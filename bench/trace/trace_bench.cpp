// bench/trace: cost of recording an event (tracing off, on with one and two
// threads), import throughput on the real traces, and the wall-time ratio of
// a traced to an untraced UNet training run on the emu device.
// Goals (issue: tracer core): <= 30 ns per event, traced/untraced <= 1.03.
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"

namespace rec = gpudiag::rec;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU time of the calling thread: on a shared, loaded machine wall time
// mostly measures the other processes.
double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

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
  for (int threads : {1, 2}) {
    rec::Options options;
    options.stacks = false;
    if (!rec::start(path.c_str(), options)) {
      std::printf("record: cannot start a trace at %s\n", path.c_str());
      return;
    }
    const Cost on = ns_per_event(threads, events);
    rec::stop();
    const gpudiag::Trace t = gpudiag::read_gdtrace(path);
    std::printf("record, %d thread%s:            %6.2f ns/event per thread (goal 30 ns: ratio %.2f); kept %zu, dropped %llu\n",
                threads, threads == 1 ? " " : "s", on.thread_cpu, on.thread_cpu / 30.0, t.allocs.size(),
                static_cast<unsigned long long>(t.dropped_events));
    std::printf("    whole process %6.2f ns/event CPU (writer thread, checksums, write(2) into the page cache), "
                "%6.2f ns/event wall\n", on.process_cpu, on.wall);
  }
  {
    rec::Options options;
    rec::start(path.c_str(), options);
    constexpr int kStacks = 200000;
    const auto t0 = Clock::now();
    for (int i = 0; i < kStacks; ++i) rec::emit(rec::AllocEvent{.addr = std::uint64_t(i), .bytes = 1, .stack = rec::capture_stack()});
    const double ns = seconds_since(t0) * 1e9 / kStacks;  // wall time: includes libunwind
    rec::stop();
    std::printf("record + stack capture:        %6.0f ns/event (stacks are opt-out: --stacks=off)\n", ns);
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

// Runs argv and returns (wall seconds, exit status).
std::pair<double, int> timed_run(const std::vector<std::string>& argv) {
  std::fflush(stdout);  // or the child's freopen writes our buffer a second time
  const auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {seconds_since(t0), WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

void unet_overhead() {
  const std::string train = GPUDIAG_TRAIN_UNET, gpudiag = GPUDIAG_EXE;
  if (train.empty() || gpudiag.empty() || !fs::exists(train) || !fs::exists(gpudiag)) {
    std::printf("traced/untraced UNet: not measured (build the train_unet and gpudiag targets first)\n");
    return;
  }
  const std::vector<std::string> args = {train, "--device", "emu", "--epochs", "1", "--train", "64"};
  const auto [plain, status] = timed_run(args);
  if (status != 0) {
    std::printf("traced/untraced UNet: not measured: `train_unet --device emu` exited with %d "
                "(the emu device is not available in libgdrt yet)\n", status);
    return;
  }
  const std::string out = (fs::temp_directory_path() / "gpudiag-bench-unet.gdtrace").string();
  std::vector<std::string> traced = {gpudiag, "trace", "-o", out, "--"};
  traced.insert(traced.end(), args.begin(), args.end());
  const auto [with, traced_status] = timed_run(traced);
  std::printf("traced/untraced UNet (emu, 1 epoch): %.2f s / %.2f s = ratio %.3f (goal <= 1.03)%s\n", with, plain,
              with / plain, traced_status == 0 ? "" : " [traced run failed]");
  fs::remove(out);
}

}  // namespace

// trace_bench                 every measurement
// trace_bench record [EVENTS] recording cost only (EVENTS per thread, default 4M)
// trace_bench import [FILE]   one import per trace (or of FILE): for profiling under callgrind
int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what.empty()) recording_cost(4'000'000);
  if (what == "record") recording_cost(argc > 2 ? std::stoull(argv[2]) : 4'000'000);
  if (what.empty()) import_throughput("", 1.0);
  if (what == "import") import_throughput(argc > 2 ? argv[2] : "", 0.0);
  if (what.empty()) unet_overhead();
  if (!what.empty() && what != "record" && what != "import") {
    std::fprintf(stderr, "usage: trace_bench [record [EVENTS] | import [FILE]]\n");
    return 2;
  }
}
