// The job report on a job of many ranks (256 by default) made from one real
// rank's trace, with a straggler, a desync and an out-of-memory planted, each
// on a rank of its own (make_job.h). From one run it prints:
//   - the analysis's CPU time per rank, all ranks with one worker, against
//     one rank alone (the median of 25 analyses of one rank's trace);
//   - the speed-up from 1 to 2 workers;
//   - the merge's peak memory: a process that reads every rank's summary
//     (the JSON of to_json, what `gpudiag report --rank-summary` writes and
//     the merge reads) and runs merge_job, against one that only reads them,
//     and the summaries' size;
//   - the peak memory of the whole analysis with 2 workers against one rank
//     alone;
//   - what the job report found: the first failure, the desync and the
//     straggler must be the planted ones (ranks, and the out-of-memory and
//     the data loading as what they are), or the bench exits 1, since the
//     figures of a wrong answer mean nothing.
// Each measure is a child process of its own (this program again), so that
// its peak resident memory is its own and not what the others left. The
// child says its peak itself (VmHWM, the peak since its exec): the
// ru_maxrss that wait4 or RUSAGE_CHILDREN give keeps the larger of that and
// the peak of the forked copy of this process before its exec, which holds
// what making the job took (several times a merge's whole peak).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/job/analyse_ranks.h"
#include "gpudiag/job/job_report.h"
#include "gpudiag/trace_io.h"
#include "make_job.h"
#include "timed_run.h"

namespace {

using namespace gpudiag;
using nlohmann::json;
namespace fs = std::filesystem;

// This process's peak resident memory since its exec, in bytes.
double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stod(line.substr(6)) * 1024;  // "VmHWM:   5832 kB"
  throw std::runtime_error("/proc/self/status says no VmHWM");
}

// CPU time of this process, all its threads, in seconds.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// --- The children: each prints its figures as one JSON object.

// analyse WORKERS REPEAT SUMMARIES_DIR|- INPUT: analyse_ranks on INPUT (a
// trace or a folder of them) REPEAT times; the summaries written to
// SUMMARIES_DIR as `gpudiag report --rank-summary` writes them.
json child_analyse(unsigned workers, int repeat, const std::string& summaries_dir, const std::string& input) {
  const std::vector<std::string> paths = expand_trace_inputs({input});
  AnalyseRanksOptions options;
  options.workers = workers;
  json seconds = json::array(), cpu = json::array();
  RankAnalysis analysis;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    analysis = analyse_ranks(paths, options);
    seconds.push_back(seconds_since(t0));
    cpu.push_back(cpu_seconds() - c0);
  }
  if (!analysis.errors.empty()) throw std::runtime_error(fmt::format("{}", fmt::join(analysis.errors, "; ")));
  if (summaries_dir != "-")
    for (const RankSummary& s : analysis.summaries) {
      std::ofstream out(fs::path(summaries_dir) / (fs::path(s.path).filename().string() + ".rank-summary.json"));
      out << to_json(s).dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
      if (!out) throw std::runtime_error("cannot write into " + summaries_dir);
    }
  return {{"seconds", seconds}, {"cpu_seconds", cpu}, {"ranks", analysis.summaries.size()}};
}

std::vector<RankSummary> read_summaries(const std::string& dir, std::uint64_t& json_bytes) {
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<RankSummary> summaries;
  for (const std::string& f : files) {
    const std::string text = read_file(f);
    json_bytes += text.size();
    summaries.push_back(rank_summary_from_json(json::parse(text)));
  }
  return summaries;
}

json child_read(const std::string& dir) {
  std::uint64_t bytes = 0;
  const std::vector<RankSummary> summaries = read_summaries(dir, bytes);
  return {{"ranks", summaries.size()}, {"json_bytes", bytes}};
}

json child_merge(const std::string& dir) {
  std::uint64_t bytes = 0;
  std::vector<RankSummary> summaries = read_summaries(dir, bytes);
  const std::size_t n = summaries.size();
  const auto t0 = std::chrono::steady_clock::now();
  const JobReport job = merge_job(std::move(summaries));
  json out = {{"ranks", n},
              {"json_bytes", bytes},
              {"merge_seconds", seconds_since(t0)},
              {"world_size", job.world_size},
              {"missing", job.missing_ranks},
              {"problems", job.problems}};
  if (job.first_failure)
    out["first_failure"] = {{"rank", job.first_failure->rank},
                            {"kind", job.first_failure->failure.kind},
                            {"step", job.first_failure->failure.step},
                            {"message", job.first_failure->message}};
  if (job.desync) {
    json sides = json::array();
    for (const Desync::Side& s : job.desync->sides) sides.push_back({{"ranks", s.ranks}, {"call", s.call}});
    out["desync"] = {
        {"group", job.desync->group}, {"seq", job.desync->seq}, {"sides", sides}, {"message", job.desync->message}};
  }
  if (job.straggler)
    out["straggler"] = {{"rank", job.straggler->rank},
                        {"why", job.straggler->why},
                        {"own_ns", job.straggler->own_ns},
                        {"others_own_ns", job.straggler->others_own_ns},
                        {"why_excess_ns", job.straggler->why_excess_ns},
                        {"message", job.straggler->message}};
  return out;
}

int child_main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 2, argv + argc);
    json out;
    if (a.size() == 5 && a[0] == "analyse")
      out = child_analyse(static_cast<unsigned>(std::stoul(a[1])), std::stoi(a[2]), a[3], a[4]);
    else if (a.size() == 2 && a[0] == "read")
      out = child_read(a[1]);
    else if (a.size() == 2 && a[0] == "merge")
      out = child_merge(a[1]);
    else
      throw std::invalid_argument("usage: --child analyse WORKERS REPEAT SUMMARIES|- INPUT | read DIR | merge DIR");
    out["peak_rss_bytes"] = peak_rss_bytes();
    std::cout << out.dump() << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "job_bench child: " << e.what() << '\n';
    return 1;
  }
}

// --- The parent.

struct Child {
  bench::Run run;
  json out;
  double peak_bytes() const { return out["peak_rss_bytes"].get<double>(); }
};

Child run_child(const std::vector<std::string>& args, const fs::path& folder) {
  static const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv = {self, "--child"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = (folder / "child.json").string();
  Child c{bench::timed_run(argv, {}, out), json()};
  if (c.run.status != 0) throw std::runtime_error(fmt::format("the child `{}` failed", fmt::join(args, " ")));
  c.out = json::parse(read_file(out));
  return c;
}

double mib(double bytes) { return bytes / 1048576.0; }

std::string ranks_text(const json& ranks) {
  std::vector<std::int32_t> r = ranks.get<std::vector<std::int32_t>>();
  return rank_list(r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return child_main(argc, argv);
  CLI::App app{
      "The job report on a job made from one real rank's trace, with a straggler, a desync and an "
      "out-of-memory planted: time per rank, speed-up from 1 to 2 workers, the merge's peak memory"};
  std::string source, keep;
  int ranks = 256;
  double wait_ms = 40;
  app.add_option("source", source, "a rank's PyTorch profiler trace of a CPU DDP job with gloo (.json or .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--ranks", ranks, "ranks in the job (at least 8)")->capture_default_str();
  app.add_option("--straggler-wait-ms", wait_ms, "how much longer the straggler's data loading takes per step")
      ->capture_default_str();
  app.add_option("--keep", keep, "make the job in this folder and keep it (default: a temporary folder, removed)");
  CLI11_PARSE(app, argc, argv);

  const fs::path folder =
      keep.empty() ? fs::temp_directory_path() / fmt::format("gpudiag-job-bench-{}", getpid()) : fs::path(keep);
  const fs::path traces = folder / "ranks", summaries = folder / "summaries";
  bool right = true;
  try {
    fs::remove_all(traces), fs::remove_all(summaries);
    fs::create_directories(traces), fs::create_directories(summaries);
    auto t0 = std::chrono::steady_clock::now();
    const bench::PlantedJob job = bench::make_job(source, traces.string(), ranks, wait_ms);
    fmt::print("source: {}: {} events, {} profiler steps, {} collective calls{}\n", source, job.source_events,
               job.source_steps, job.source_collectives,
               job.source_had_data_loading
                   ? ""
                   : " (no data loading range: a 0.5 ms `data_loading` put at each step's start)");
    fmt::print("job: {} ranks in {} ({:.1f} MiB), made in {:.1f} s\n", ranks, traces.string(),
               mib(static_cast<double>(job.bytes)), seconds_since(t0));
    fmt::print(
        "  straggler: rank {}, its data loading {:.0f} ms longer in each of {} steps; the others wait as long "
        "in their next collective\n",
        job.straggler, job.straggler_wait_ms, job.straggled_steps);
    fmt::print("  desync: rank {} leaves out its collective call #{}, {}\n", job.desync, job.dropped, job.dropped_call);
    fmt::print("  out-of-memory: rank {}, in step {}, written as {}{}\n", job.oom, job.oom_step,
               job.oom_format == "gdtrace" ? ".gdtrace" : "Kineto JSON ([OutOfMemory] as PyTorch's profiler writes it)",
               job.oom_format_why.empty() ? "" : ": " + job.oom_format_why);
    std::fflush(stdout);

    const Child alone = run_child({"analyse", "1", "25", "-", job.files[0]}, folder);
    double load = 0;
    getloadavg(&load, 1);
    const Child one = run_child({"analyse", "1", "3", "-", traces.string()}, folder);
    const Child two = run_child({"analyse", "2", "3", summaries.string(), traces.string()}, folder);
    const Child read = run_child({"read", summaries.string()}, folder);
    const Child merge = run_child({"merge", summaries.string()}, folder);

    // The time per rank is CPU time: one rank takes a few milliseconds, about a
    // scheduler tick, so on a shared machine its wall time jumps by whole
    // ticks whenever another process runs; the speed-up is wall time. Each
    // figure is the median of its runs.
    const auto median_of = [](const Child& c, const char* key) {
      return bench::median(c.out[key].get<std::vector<double>>());
    };
    const double alone_cpu = median_of(alone, "cpu_seconds"), alone_wall = median_of(alone, "seconds");
    const double one_cpu = median_of(one, "cpu_seconds"), one_wall = median_of(one, "seconds");
    const double two_cpu = median_of(two, "cpu_seconds"), two_wall = median_of(two, "seconds");
    fmt::print("one rank alone: {:.2f} ms CPU ({:.2f} ms wall), the median of {} analyses; peak RSS {:.1f} MiB\n",
               alone_cpu * 1e3, alone_wall * 1e3, alone.out["seconds"].size(), mib(alone.peak_bytes()));
    fmt::print(
        "{} ranks, 1 worker: {:.2f} s CPU ({:.2f} s wall), {:.2f} ms CPU per rank: {:.2f}x one rank alone (medians of "
        "3 "
        "runs)\n",
        ranks, one_cpu, one_wall, one_cpu / ranks * 1e3, one_cpu / ranks / alone_cpu);
    fmt::print(
        "{} ranks, 2 workers: {:.2f} s wall ({:.2f} s CPU): a speed-up of {:.2f}x from 1 to 2 workers ({} cores here, "
        "load average {:.1f} before)\n",
        ranks, two_wall, two_cpu, one_wall / two_wall, std::thread::hardware_concurrency(), load);
    fmt::print(
        "peak RSS of the analysis: {} ranks with 2 workers {:.0f} MiB, {:.2f}x one rank alone ({} ranks with 1 "
        "worker: {:.0f} MiB)\n",
        ranks, mib(two.peak_bytes()), two.peak_bytes() / alone.peak_bytes(), ranks, mib(one.peak_bytes()));
    const double json_bytes = merge.out["json_bytes"].get<double>();
    fmt::print("merge: {} summaries, {:.2f} MiB of JSON ({:.1f} KiB per rank); merge_job took {:.1f} ms\n",
               merge.out["ranks"].get<int>(), mib(json_bytes), json_bytes / ranks / 1024,
               merge.out["merge_seconds"].get<double>() * 1e3);
    fmt::print(
        "  peak RSS reading the summaries: {:.1f} MiB; reading and merging them: {:.1f} MiB (the merge adds {:+.1f} "
        "MiB)\n",
        mib(read.peak_bytes()), mib(merge.peak_bytes()), mib(merge.peak_bytes() - read.peak_bytes()));

    // What the job report found, against what was planted.
    const json& m = merge.out;
    const auto check = [&](bool ok, const std::string& what) {
      fmt::print("  {} {}\n", ok ? "ok   " : "WRONG", what);
      right &= ok;
    };
    fmt::print("job report:\n");
    check(m["ranks"] == ranks && m["world_size"] == ranks && m["missing"].empty(),
          fmt::format("{} ranks of a world of {}, {} missing", m["ranks"].get<int>(), m["world_size"].get<int>(),
                      m["missing"].size()));
    for (const json& p : m["problems"]) fmt::print("  problem: {}\n", p.get<std::string>());
    if (m.contains("first_failure")) {
      const json& f = m["first_failure"];
      check(f["rank"] == job.oom && f["kind"] == "out-of-memory",
            fmt::format("first failure: rank {}, {} in step {} (planted: rank {}, out-of-memory in step {})",
                        f["rank"].get<int>(), f["kind"].get<std::string>(), f["step"].get<std::int64_t>(), job.oom,
                        job.oom_step));
    } else {
      check(false, fmt::format("no first failure (planted: rank {}, out-of-memory)", job.oom));
    }
    if (m.contains("desync")) {
      const json& d = m["desync"];
      std::vector<std::string> sides;
      for (const json& s : d["sides"])
        sides.push_back(fmt::format("{}: {}", ranks_text(s["ranks"]), s["call"].get<std::string>()));
      const bool ok = d["sides"].size() == 2 && d["sides"][1]["ranks"] == json::array({job.desync});
      const std::string group = d["group"].get<std::string>();
      check(ok,
            fmt::format("desync at #{} of group {}: {} (planted: rank {} leaves out #{})", d["seq"].get<std::int64_t>(),
                        group.empty() ? "(default)" : group, fmt::join(sides, " / "), job.desync, job.dropped));
    } else {
      check(false, fmt::format("no desync (planted: rank {})", job.desync));
    }
    if (m.contains("straggler")) {
      const json& s = m["straggler"];
      check(s["rank"] == job.straggler && s["why"] == "data loading",
            fmt::format("straggler: rank {}, its {} {:.1f} ms longer per step; its own work {:.1f} ms per step, the "
                        "others' {:.1f} ms (planted: rank {}, its data loading {:.0f} ms longer)",
                        s["rank"].get<int>(), s["why"].get<std::string>(), s["why_excess_ns"].get<double>() / 1e6,
                        s["own_ns"].get<double>() / 1e6, s["others_own_ns"].get<double>() / 1e6, job.straggler,
                        job.straggler_wait_ms));
    } else {
      check(false, fmt::format("no straggler (planted: rank {})", job.straggler));
    }
    if (!right) std::cerr << "job_bench: the job report did not find what was planted: these figures do not count\n";
  } catch (const std::exception& e) {
    std::cerr << "job_bench: " << e.what() << '\n';
    right = false;
  }
  std::error_code ec;
  if (keep.empty()) fs::remove_all(folder, ec);
  return right ? 0 : 1;
}
