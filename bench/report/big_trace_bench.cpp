// `gpudiag report` on a trace bigger than the memory it may take: a real
// recording (a PyTorch UNet on an H100) with its training loop repeated
// until the file holds TARGET bytes, as a run recorded for hours would be.
// Prints the trace's size and events, then the report's time, throughput,
// peak resident memory per event and its findings, with the number of
// passes it took, so that what a big trace costs is measured, not assumed.
//
// big_trace_bench RECORDING TARGET_SIZE GPUDIAG [--memory SIZE] [--keep PATH]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/import/load_trace.h"
#include "repeated_loop.h"
#include "segment_ring.h"
#include "timed_run.h"

namespace {

using namespace gpudiag;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: big_trace_bench RECORDING TARGET_SIZE GPUDIAG [--memory SIZE] [--keep PATH]\n";
    return 2;
  }
  const std::string recording = argv[1], gpudiag_exe = argv[3];
  const auto target = gdtrace::parse_size(argv[2]);
  std::string memory, keep;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--memory") memory = argv[i + 1];
    if (std::string(argv[i]) == "--keep") keep = argv[i + 1];
  }
  if (!target) {
    std::cerr << "big_trace_bench: not a size: " << argv[2] << "\n";
    return 2;
  }
  if (!std::filesystem::exists(recording)) {
    std::cout << fmt::format("big_trace_bench: skipped: the recording {} is not here\n", recording);
    return 0;
  }
  const std::string path =
      keep.empty() ? (std::filesystem::temp_directory_path() / fmt::format("gpudiag-big-{}.gdtrace", getpid())).string()
                   : keep;
  auto t0 = std::chrono::steady_clock::now();
  Trace source = load_trace(recording);
  const std::uint64_t recorded = source.event_count();
  const testing::RepeatedLoop made = testing::write_repeated_loop(std::move(source), path, *target);
  const double made_s = seconds_since(t0);
  const double events = static_cast<double>(recorded + made.copies * made.loop_events);
  std::cout << fmt::format("trace: {} with its loop ({} events) repeated {} times: {:.2f} GiB, {:.0f} M events, "
                           "{:.1f} bytes per event on disk, written in {:.0f} s\n",
                           recording, made.loop_events, made.copies, static_cast<double>(made.bytes) / (1u << 30),
                           events / 1e6, static_cast<double>(made.bytes) / events, made_s);

  const std::string json = path + ".report.json";
  std::vector<std::string> report = {gpudiag_exe, "report", "--json", "--fail-on", "none"};
  if (!memory.empty()) report.insert(report.end(), {"--memory", memory});
  report.push_back(path);
  const bench::Run r = bench::timed_run(report, {}, json);
  int status = 0;
  if (r.status != 0) {
    std::cerr << fmt::format("gpudiag report failed with status {}\n", r.status);
    status = 1;
  } else {
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
    std::string passes = "whole";
    for (const auto& w : j["trace"]["warnings"])
      if (w["id"] == "analysed-in-passes") passes = w["message"].get<std::string>().substr(0, 120) + "...";
    std::cout << fmt::format("gpudiag report --json{}: {:.1f} s, {:.2f} M events/s, peak RSS {:.2f} GiB, {:.0f} bytes "
                             "per event\n  {}\n",
                             memory.empty() ? "" : " --memory " + memory, r.wall, events / r.wall / 1e6,
                             r.peak_bytes / (1u << 30), r.peak_bytes / events, passes);
    for (const auto& f : j["findings"])
      std::cout << fmt::format("  {} {}\n", f["rule"].get<std::string>(),
                               f["message"].get<std::string>().substr(0, 110));
  }
  std::filesystem::remove(json);
  if (keep.empty()) std::filesystem::remove(path);
  return status;
}
