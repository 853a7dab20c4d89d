// Throughput and peak memory of `gpudiag report` on a synthetic trace of
// N events (default 10 million): kernels on two streams with their pointer
// parameters, allocations and frees, copies, syncs and launch calls, as a
// long training run makes them.
// Prints events/s of the analysis in process, then of the whole CLI
// (load + analyse + JSON) on the trace written as .gdtrace, with the CLI's
// peak RSS.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "timed_run.h"

namespace {

using namespace gpudiag;

Trace synthetic(std::uint64_t events) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  t.path = "synthetic";
  const StringId names[] = {t.intern("void gemm<float, 128>(float const*, float*)"), t.intern("relu_kernel"),
                            t.intern("cudaLaunchKernel"), t.intern("layer_norm<float>")};
  std::uint64_t now = 1'000'000, corr = 1, made = 0;
  std::vector<std::uint64_t> live;
  while (made < events) {
    // One "op": a launch call, its kernel, an activation alloc, sometimes a free, a copy or a sync.
    t.api_calls.push_back({.start_ns = now, .end_ns = now + 4'000, .name = names[2], .domain = ApiDomain::Runtime,
                           .correlation = corr});
    t.kernels.push_back({.start_ns = now + 5'000, .end_ns = now + 5'000 + 20'000 + (corr % 7) * 9'000,
                         .name = names[corr % 2 ? 0 : (corr % 3 ? 1 : 3)], .device = 0, .stream = 7 + corr % 2,
                         .correlation = corr});
    const std::uint64_t addr = 0x7f0000000000ull + (corr % 100'000) * 0x10000;
    t.allocs.push_back({.time_ns = now - 1'000, .addr = addr, .bytes = 4096 + (corr % 64) * 512,
                        .kind = MemKind::Device, .device = 0});
    // Its pointer parameters, as the tracer records them on a GPU: the
    // activation it writes and the oldest live one it reads.
    const std::uint64_t read = live.empty() ? addr : live.back();
    for (std::uint32_t index = 0; index < 2; ++index)
      t.kernel_args.push_back({.time_ns = now, .value = index == 0 ? addr : read, .index = index,
                               .memory = MemKind::Device, .device = 0, .stream = 7 + corr % 2,
                               .correlation = corr});
    made += 5;
    live.push_back(addr);
    if (live.size() > 64) {
      t.frees.push_back({.time_ns = now + 2'000, .addr = live.front(), .kind = MemKind::Device, .device = 0});
      live.erase(live.begin());
      ++made;
    }
    if (corr % 50 == 0) {
      t.memcpys.push_back({.start_ns = now + 30'000, .end_ns = now + 40'000, .dst = addr, .src = 0x1000, .bytes = 1 << 16,
                           .copy = CopyKind::HtoD, .src_kind = MemKind::Pinned, .dst_kind = MemKind::Device,
                           .async = true, .device = 0, .stream = 7});
      ++made;
    }
    if (corr % 200 == 0) {
      t.syncs.push_back({.start_ns = now + 40'000, .end_ns = now + 60'000, .kind = SyncKind::Device, .device = 0});
      ++made;
    }
    now += 30'000;
    ++corr;
  }
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const std::string gpudiag_exe = argc > 2 ? argv[2] : "";
  auto t0 = std::chrono::steady_clock::now();
  Trace trace = synthetic(events);
  const double n = static_cast<double>(trace.event_count());
  std::cout << fmt::format("synthetic trace: {} events built in {:.2f} s\n", trace.event_count(), seconds_since(t0));

  t0 = std::chrono::steady_clock::now();
  const Report report = analyze(trace);
  const double analyse_s = seconds_since(t0);
  std::cout << fmt::format("analyze (timeline, breakdown, every detector): {:.2f} s, {:.2f} M events/s, {} findings\n",
                           analyse_s, n / analyse_s / 1e6, report.findings.size());
  for (const Finding& f : report.findings) std::cout << fmt::format("  {} {}\n", f.rule_id, f.message.substr(0, 100));
  t0 = std::chrono::steady_clock::now();
  const std::string json = report_json(trace, report).dump();
  std::cout << fmt::format("report_json: {:.3f} s ({} bytes)\n", seconds_since(t0), json.size());

  if (gpudiag_exe.empty()) return 0;
  const auto path = std::filesystem::temp_directory_path() / fmt::format("gpudiag-report-bench-{}.gdtrace", getpid());
  write_gdtrace(trace, path.string());
  trace = Trace();
  std::cout << fmt::format(".gdtrace: {:.0f} MiB\n", static_cast<double>(std::filesystem::file_size(path)) / 1048576.0);
  const bench::Run cli = bench::timed_run({gpudiag_exe, "report", "--json", "--fail-on", "none", path.string()}, {});
  const double cli_s = cli.wall;
  std::filesystem::remove(path);
  if (cli.status != 0) {
    std::cerr << "gpudiag report failed\n";
    return 1;
  }
  const double peak_bytes = cli.peak_bytes;
  std::cout << fmt::format("gpudiag report --json (load + analyse + write): {:.2f} s, {:.2f} M events/s, peak RSS {:.0f} MiB, "
                           "{:.0f} bytes per event\n",
                           cli_s, n / cli_s / 1e6, peak_bytes / 1048576.0, peak_bytes / static_cast<double>(n));
  return 0;
}
