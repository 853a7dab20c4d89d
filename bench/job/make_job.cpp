#include "make_job.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "gpudiag/import/load_trace.h"
#include "gpudiag/job/analyse_ranks.h"
#include "gpudiag/trace_io.h"
#include "gzip_file.h"
#include "kineto_edit.h"

namespace gpudiag::bench {
namespace {

namespace fs = std::filesystem;

// A step where a late rank keeps the others waiting: its data loading, and
// the gloo run of its first collective call after it.
struct Straggle {
  std::size_t step = 0;                    // index into KinetoLayout::steps
  std::size_t data_loading = 0, call = 0;  // into data_loading, calls (and runs)
};

std::vector<Straggle> straggles_of(const json& trace, const KinetoLayout& l) {
  const json& events = trace["traceEvents"];
  std::vector<Straggle> out;
  for (std::size_t s = 0; s < l.steps.size(); ++s) {
    const double begin = start_us(events[l.steps[s]]), end = end_us(events[l.steps[s]]);
    std::optional<std::size_t> dl, call;
    for (std::size_t d = 0; d < l.data_loading.size() && !dl; ++d)
      if (const double t = start_us(events[l.data_loading[d]]); begin <= t && t < end) dl = d;
    if (!dl) continue;
    for (std::size_t c = 0; c < l.calls.size() && !call; ++c)
      if (const double t = start_us(events[l.calls[c]]); end_us(events[l.data_loading[*dl]]) <= t && t < end) call = c;
    if (call) out.push_back({s, *dl, *call});
  }
  return out;
}

double mid_us(const json& e) { return (start_us(e) + end_us(e)) / 2; }

// A 0.5 ms data_loading range at each step's start, for a source that has none.
void add_data_loading(json& trace) {
  const KinetoLayout l = layout_of(trace);
  for (auto s = l.steps.rbegin(); s != l.steps.rend(); ++s) {
    const json step = trace["traceEvents"][*s];
    const double at = start_us(step) + 1;
    insert_time(trace, at, 500);
    trace["traceEvents"].push_back({{"ph", "X"},
                                    {"cat", "user_annotation"},
                                    {"name", "data_loading"},
                                    {"pid", step["pid"]},
                                    {"tid", step["tid"]},
                                    {"ts", at},
                                    {"dur", 500},
                                    {"args", json::object()}});
  }
}

std::string call_text(const json& trace, const KinetoLayout& l, std::size_t c) {
  const json& events = trace["traceEvents"];
  const json& run = events[l.runs[c]];
  const json args = run.value("args", json::object());
  std::string step;
  for (const std::size_t s : l.steps)
    if (start_us(events[s]) <= start_us(events[l.calls[c]]) && start_us(events[l.calls[c]]) < end_us(events[s]))
      step = " in " + events[s]["name"].get<std::string>();
  return fmt::format("{} ({} of {} {}){}", events[l.calls[c]]["name"].get<std::string>(),
                     run["name"].get<std::string>(), args.value("Input type", json::array()).dump(),
                     args.value("Input Dims", json::array()).dump(), step);
}

// What the job report tells collectives apart by: the op, and the input's type and shape.
std::string signature(const json& run) {
  const json args = run.value("args", json::object());
  return run["name"].get<std::string>() + args.value("Input type", json::array()).dump() +
         args.value("Input Dims", json::array()).dump();
}

std::int64_t step_number(const json& step) {
  const std::string name = step["name"].get<std::string>();
  return std::stoll(name.substr(name.find('#') + 1));
}

std::string dump(const json& trace) { return trace.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

PlantedJob make_job(const std::string& source, const std::string& folder, int ranks, double straggler_wait_ms) {
  if (ranks < 8)
    throw std::invalid_argument("a job of at least 8 ranks is needed to plant three faults on ranks of their own");
  PlantedJob job;
  json base;
  try {
    base = json::parse(read_maybe_gzipped(source));
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a PyTorch profiler trace: {}", source, e.what()));
  }
  if (!base.is_object() || !base.contains("traceEvents") || !base["traceEvents"].is_array())
    throw std::runtime_error(source + ": not a PyTorch profiler trace: no traceEvents");
  job.source_events = base.at("traceEvents").size();
  KinetoLayout l = layout_of(base);
  job.source_had_data_loading = !l.data_loading.empty();
  if (!job.source_had_data_loading) add_data_loading(base), l = layout_of(base);
  job.source_steps = l.steps.size();
  job.source_collectives = l.calls.size();
  if (l.calls.size() != l.runs.size() || l.calls.empty())
    throw std::runtime_error(
        fmt::format("{}: {} c10d calls and {} gloo runs: not a gloo job whose calls and runs pair up", source,
                    l.calls.size(), l.runs.size()));
  const std::vector<Straggle> straggles = straggles_of(base, l);
  if (straggles.size() < 3)
    throw std::runtime_error(
        fmt::format("{}: {} steps with data loading then a collective; 3 are needed", source, straggles.size()));
  const json& events = base["traceEvents"];

  job.straggler = ranks / 7;
  job.desync = ranks / 2;
  job.oom = ranks * 4 / 5;
  job.straggler_wait_ms = straggler_wait_ms;
  job.straggled_steps = straggles.size();
  const double wait_us = straggler_wait_ms * 1000;
  json straggler = base, others = base;
  for (auto s = straggles.rbegin(); s != straggles.rend(); ++s) {  // from the last, so earlier moments stay put
    insert_time(straggler, mid_us(events[l.data_loading[s->data_loading]]), wait_us);
    insert_time(others, mid_us(events[l.runs[s->call]]), wait_us);
  }

  // The desync: the first call from the middle on whose absence shows, its
  // next call being unlike it (a sequence of like calls one shorter shows
  // only as a rank that stopped early).
  std::optional<std::size_t> dropped;
  for (std::size_t c = l.calls.size() / 2; c + 1 < l.calls.size() && !dropped; ++c)
    if (signature(events[l.runs[c]]) != signature(events[l.runs[c + 1]])) dropped = c;
  if (!dropped)
    throw std::runtime_error(
        fmt::format("{}: its collectives from the middle on are all alike (op, type, shape): one "
                    "left out would not change the sequence, only shorten it",
                    source));
  job.dropped = *dropped;
  job.dropped_call = call_text(base, l, *dropped);
  json desync = others;
  drop_events(desync, {l.calls[*dropped], l.runs[*dropped]});

  // The out-of-memory, two thirds into the run, as PyTorch's profiler
  // records one with profile_memory (CPU: Device Type 0).
  json oom = others;
  const Straggle& at = straggles[straggles.size() * 2 / 3];
  const json& oom_events = oom["traceEvents"];
  const json main_step = oom_events[l.steps[at.step]];
  const double oom_us =
      (end_us(oom_events[l.data_loading[at.data_loading]]) + start_us(oom_events[l.calls[at.call]])) / 2;
  job.oom_step = step_number(main_step);
  oom["traceEvents"].push_back({{"ph", "i"},
                                {"cat", "cpu_instant_event"},
                                {"s", "t"},
                                {"name", "[OutOfMemory]"},
                                {"pid", main_step["pid"]},
                                {"tid", main_step["tid"]},
                                {"ts", oom_us},
                                {"args",
                                 {{"Device Type", 0},
                                  {"Device Id", -1},
                                  {"Bytes", std::int64_t{16} << 30},
                                  {"Total Allocated", std::int64_t{3} << 30},
                                  {"Total Reserved", 0}}}});
  cut_at(oom, oom_us, 200);

  for (int r = 0; r < ranks; ++r) {
    json trace = r == job.straggler ? straggler : r == job.desync ? desync : r == job.oom ? oom : others;
    make_rank(trace, r, ranks, std::int64_t{16} * r, (r * 37) % 101);
    const std::string path = (fs::path(folder) / fmt::format("rank{}.kineto.json.gz", r)).string();
    write_gzipped(path, dump(trace));
    job.files.push_back(path);
  }

  // Mixed formats: the out-of-memory rank as gpudiag's own .gdtrace, loaded
  // through the import, when that keeps what the job report needs of it.
  const std::string kineto = job.files[static_cast<std::size_t>(job.oom)];
  const std::string gdtrace = (fs::path(folder) / fmt::format("rank{}.gdtrace", job.oom)).string();
  write_gdtrace(load_trace(kineto), gdtrace);
  const RankSummary k = summarize_trace(kineto, {}), g = summarize_trace(gdtrace, {});
  std::vector<std::string> lost;
  if (g.job.rank != k.job.rank || g.job.world_size != k.job.world_size) lost.push_back("its rank");
  if (g.collectives.size() != k.collectives.size())
    lost.push_back(fmt::format("{} of its {} collectives",
                               k.collectives.size() - std::min(k.collectives.size(), g.collectives.size()),
                               k.collectives.size()));
  if (!g.failure || g.failure->kind != "out-of-memory") lost.push_back("its out-of-memory");
  if (lost.empty()) {
    fs::remove(kineto);
    job.files[static_cast<std::size_t>(job.oom)] = gdtrace;
    job.oom_format = "gdtrace";
  } else {
    fs::remove(gdtrace);
    job.oom_format = "kineto";
    job.oom_format_why = fmt::format("as a .gdtrace it would lose {}", fmt::join(lost, " and "));
  }
  for (const std::string& f : job.files) job.bytes += fs::file_size(f);
  return job;
}

}  // namespace gpudiag::bench
