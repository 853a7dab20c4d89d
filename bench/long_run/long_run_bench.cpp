// A long run under a bounded trace: long_run_unet (a tiny UNet on emu with
// a leak from step --leak-from on) trained for --steps steps untraced, then
// under `gpudiag trace --max-size`, then reported. It prints, every --every
// steps, the trace's size on disk, the resident memory of the traced and
// untraced process and their step times, and then:
//   - the largest trace size once the bound was reached, against the bound
//     (flat: the ring drops what the bound cannot hold);
//   - the traced process's growth in resident memory against the untraced
//     one's (the leak grows both alike; the recorder adds a constant);
//   - traced/untraced step time at the start and at the end (no growth);
//   - the report's time, and its GD007 finding with its stack.
// --check exits 1 when the size passes the bound by more than a segment and
// the buffers, when the report misses the leak, or when it finds anything
// else above a note: the short version a test runs.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Sample {
  double ms_per_step = 0;
  std::uint64_t rss_kib = 0, trace_bytes = 0;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; its stdout, and its exit status.
std::pair<std::string, int> run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {out, -1};
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

std::map<long long, Sample> samples_of(const std::string& out) {
  std::map<long long, Sample> samples;
  std::size_t pos = 0;
  for (std::size_t end; (end = out.find('\n', pos)) != std::string::npos; pos = end + 1) {
    long long step = 0;
    Sample s;
    unsigned long long rss = 0, bytes = 0;
    if (std::sscanf(out.c_str() + pos, "at %lld ms_per_step %lf rss_kib %llu trace_bytes %llu", &step, &s.ms_per_step,
                    &rss, &bytes) == 4) {
      s.rss_kib = rss;
      s.trace_bytes = bytes;
      samples[step] = s;
    }
  }
  return samples;
}

std::uint64_t parse_size(const std::string& text) {
  char unit = 0;
  unsigned long long n = 0;
  std::sscanf(text.c_str(), "%llu%c", &n, &unit);
  const int shift = unit == 'k' || unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
  return n << shift;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("A long training run under gpudiag trace --max-size");
  std::string gpudiag, program, max_size = "64M", dir;
  long long steps = 100000, leak_from = 50000, every = 5000;
  bool check = false;
  app.add_option("--gpudiag", gpudiag)->required();
  app.add_option("--program", program, "long_run_unet")->required();
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--leak-from", leak_from);
  app.add_option("--every", every)->check(CLI::PositiveNumber);
  app.add_option("--max-size", max_size);
  app.add_option("--dir", dir, "where the trace goes (default: a new temporary folder)");
  app.add_flag("--check", check, "exit 1 unless the trace stayed bounded and the report found the leak");
  CLI11_PARSE(app, argc, argv);
  if (dir.empty()) dir = (fs::temp_directory_path() / fmt::format("gpudiag-long-run-{}", getpid())).string();
  fs::create_directories(dir);
  const std::string args = fmt::format(" --steps {} --leak-from {} --every {}", steps, leak_from, every);

  const auto untraced_run = run(quote(program) + args);
  const std::string trace = (fs::path(dir) / "run.gdtrace").string();
  const auto traced_run = run(quote(gpudiag) + " trace --live=off --max-size " + quote(max_size) + " -o " + quote(trace) +
                              " -- " + quote(program) + args + " 2>/dev/null");
  if (untraced_run.second != 0 || traced_run.second != 0) {
    fmt::print(stderr, "long_run_bench: a run failed (untraced {}, traced {})\n", untraced_run.second, traced_run.second);
    return 2;
  }
  const auto untraced = samples_of(untraced_run.first), traced = samples_of(traced_run.first);
  const std::uint64_t bound = parse_size(max_size);

  fmt::print("{:>8} {:>10} {:>12} {:>14} {:>12} {:>14} {:>7}\n", "step", "trace MiB", "traced RSS", "untraced RSS",
             "traced ms", "untraced ms", "ratio");
  std::uint64_t largest_when_full = 0, first_full_rss = 0;
  std::vector<std::uint64_t> sizes_when_full;
  long long first_full = -1;
  for (const auto& [step, t] : traced) {
    const Sample u = untraced.count(step) ? untraced.at(step) : Sample{};
    fmt::print("{:>8} {:>10.2f} {:>8} MiB {:>10} MiB {:>12.4f} {:>14.4f} {:>7.3f}\n", step, t.trace_bytes / 1048576.0,
               t.rss_kib / 1024, u.rss_kib / 1024, t.ms_per_step, u.ms_per_step,
               u.ms_per_step > 0 ? t.ms_per_step / u.ms_per_step : 0.0);
    if (t.trace_bytes * 10 >= bound * 9) {
      if (first_full < 0) first_full = step, first_full_rss = t.rss_kib;
      largest_when_full = std::max(largest_when_full, t.trace_bytes);
      sizes_when_full.push_back(t.trace_bytes);
    }
  }
  if (traced.empty() || untraced.empty()) {
    fmt::print(stderr, "long_run_bench: the program printed no samples\n");
    return 2;
  }
  const auto ratio = [&](const auto& it_t, const auto& it_u) { return it_t->second.ms_per_step / it_u->second.ms_per_step; };
  std::sort(sizes_when_full.begin(), sizes_when_full.end());
  fmt::print("\nbound {:.1f} MiB; once full (from step {}): median {:.2f} MiB, largest {:.2f} MiB\n", bound / 1048576.0,
             first_full, sizes_when_full.empty() ? 0.0 : sizes_when_full[sizes_when_full.size() / 2] / 1048576.0,
             largest_when_full / 1048576.0);
  if (first_full >= 0) {
    const std::int64_t traced_growth = static_cast<std::int64_t>(traced.rbegin()->second.rss_kib) -
                                       static_cast<std::int64_t>(first_full_rss);
    const std::int64_t untraced_growth = static_cast<std::int64_t>(untraced.rbegin()->second.rss_kib) -
                                         static_cast<std::int64_t>(untraced.count(first_full) ? untraced.at(first_full).rss_kib : 0);
    fmt::print("resident memory from then to the end: traced {:+} KiB, untraced {:+} KiB (the leak's own share)\n",
               traced_growth, untraced_growth);
  }
  fmt::print("traced/untraced per step: {:.3f} at the start, {:.3f} at the end\n",
             ratio(traced.begin(), untraced.begin()), ratio(traced.rbegin(), untraced.rbegin()));

  const auto started = std::chrono::steady_clock::now();
  const auto report = run(quote(gpudiag) + " report --json --fail-on none " + quote(trace) + " 2>/dev/null");
  const double report_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("report: {:.2f} s\n", report_s);
  bool leak_found = false;
  std::vector<std::string> others;  // what a healthy run with a leak must not show
  try {
    const nlohmann::json j = nlohmann::json::parse(report.first);
    for (const auto& f : j.at("findings")) {
      if (f.at("rule") != "GD007") {
        if (f.value("severity", "") != "note") others.push_back(f.value("rule", "") + ": " + f.value("message", ""));
        continue;
      }
      leak_found = true;
      // Where the leaked memory was allocated: the stack of the finding, or
      // of its first note.
      nlohmann::json stack = f.value("stack", nlohmann::json::array());
      if (stack.empty() && f.contains("notes") && !f.at("notes").empty())
        stack = f.at("notes").at(0).value("stack", nlohmann::json::array());
      std::string where;
      for (const auto& frame : stack) {
        if (!where.empty()) where += " <- ";
        where += frame.value("function", "?");
        if (frame.value("function", "") == "main") break;
      }
      fmt::print("GD007: {}\n  allocated at {}\n", f.value("message", ""), where.empty() ? "(no stack)" : where);
    }
  } catch (const std::exception& e) {
    fmt::print("the report is not JSON: {}\n", e.what());
  }
  if (!leak_found) fmt::print("the report has no GD007\n");
  for (const std::string& o : others) fmt::print("unexpected: {}\n", o);
  if (!check) return 0;
  // A segment (an eighth of the bound) and the buffers written since the
  // last pass of the writer may pass the bound for a moment.
  const bool bounded = first_full >= 0 && largest_when_full <= bound + bound / 8 + (4u << 20);
  if (!bounded) fmt::print("FAILED: the trace was not bounded\n");
  if (!leak_found) fmt::print("FAILED: the leak was not found\n");
  if (!others.empty()) fmt::print("FAILED: findings the run does not have\n");
  return bounded && leak_found && others.empty() ? 0 : 1;
}
