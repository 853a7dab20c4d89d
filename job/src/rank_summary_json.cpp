// A rank's summary as JSON and back: what a Dask worker or
// `gpudiag report --rank-summary` hands to the merge. Times are strings of
// decimal digits: epoch nanoseconds do not survive readers that use doubles.
#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "gpudiag/emit.h"
#include "gpudiag/job/rank_summary.h"

namespace gpudiag {
namespace {

using nlohmann::json;

std::string ns(std::uint64_t v) { return std::to_string(v); }
std::uint64_t ns_of(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  const std::string text = v.get<std::string>();
  std::size_t used = 0;
  const std::uint64_t value = std::stoull(text, &used);
  if (used != text.size() || text.empty() || text[0] == '-') throw std::invalid_argument(fmt::format("{}: not a count", key));
  return value;
}

// A signature is 16 hex digits, which no reader's doubles round.
std::uint64_t hex_of(const json& j) {
  const std::string text = j.get<std::string>();
  const bool hex = !text.empty() && text.size() <= 16 &&
                   std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
  if (!hex) throw std::invalid_argument(fmt::format("{}: not a signature", text));
  return std::stoull(text, nullptr, 16);
}

json frames_json(const std::vector<Frame>& frames) {
  Finding carrier;
  carrier.stack = frames;
  return to_json(carrier).value("stack", json::array());
}
std::vector<Frame> frames_from(const json& j) {
  json carrier = {{"rule", ""}, {"severity", "note"}, {"message", ""}, {"stack", j}};
  return finding_from_json(carrier).stack;
}

json failure_json(const RankFailure& f) {
  return {{"kind", f.kind}, {"time_ns", ns(f.time_ns)}, {"what", f.what}, {"step", f.step}, {"stack", frames_json(f.stack)}};
}

}  // namespace

json to_json(const RankSummary& s) {
  json j;
  j["gpudiag_rank_summary"] = kRankSummaryVersion;
  j["path"] = s.path;
  j["source"] = s.source;
  j["job"] = {{"rank", s.job.rank},
              {"world_size", s.job.world_size},
              {"local_rank", s.job.local_rank},
              {"backend", s.job.backend},
              {"launcher", s.job.launcher},
              {"host", s.job.host}};
  j["pid"] = s.pid;
  j["exit_status"] = s.exit_status;
  j["clock"] = s.clock;
  j["clock_uncertainty_ns"] = ns(s.clock_uncertainty_ns);
  j["begin_ns"] = ns(s.begin_ns);
  j["end_ns"] = ns(s.end_ns);
  j["warnings"] = s.warnings;
  j["findings"] = to_json(std::span<const Finding>(s.findings))["findings"];
  if (s.failure) j["failure"] = failure_json(*s.failure);
  json collectives = json::array();
  for (const RankCollective& c : s.collectives)
    collectives.push_back({{"op", c.op},
                           {"group", c.group},
                           {"seq", c.seq},
                           {"seq_from_source", c.seq_from_source},
                           {"bytes", c.bytes},
                           {"begin_ns", ns(c.begin_ns)},
                           {"end_ns", ns(c.end_ns)},
                           {"unfinished", c.unfinished},
                           {"stack", frames_json(c.stack)}});
  j["collectives"] = std::move(collectives);
  json dropped = json::array();
  for (const RankCollectivesDropped& d : s.collectives_dropped) {
    json signatures = json::array();
    for (const std::uint64_t sig : d.signatures) signatures.push_back(fmt::format("{:016x}", sig));
    dropped.push_back({{"group", d.group}, {"count", d.count}, {"every", d.every}, {"signatures", std::move(signatures)}});
  }
  j["collectives_dropped"] = std::move(dropped);
  json steps = json::array();
  for (const RankStep& st : s.steps)
    steps.push_back({{"number", st.number},
                     {"begin_ns", ns(st.begin_ns)},
                     {"end_ns", ns(st.end_ns)},
                     {"collective_ns", st.collective_ns},
                     {"data_loading_ns", st.data_loading_ns},
                     {"gpu_busy_ns", st.gpu_busy_ns}});
  j["steps"] = std::move(steps);
  json peaks = json::array();
  for (const auto& p : s.peaks) peaks.push_back({{"device", p.device}, {"bytes", p.bytes}});
  j["peaks"] = std::move(peaks);
  json gpu = json::array();
  for (const RankGpuTime& g : s.gpu_time)
    gpu.push_back({{"device", g.device},
                   {"total_ns", g.total_ns},
                   {"idle_ns", g.idle_ns},
                   {"computation_ns", g.computation_ns},
                   {"communication_ns", g.communication_ns},
                   {"exposed_comm_ns", g.exposed_comm_ns},
                   {"memcpy_ns", g.memcpy_ns}});
  j["gpu_time"] = std::move(gpu);
  return j;
}

RankSummary rank_summary_from_json(const json& j) {
  try {
    if (!j.is_object() || !j.contains("gpudiag_rank_summary"))
      throw std::invalid_argument("not a gpudiag rank summary");
    if (j["gpudiag_rank_summary"] != kRankSummaryVersion)
      throw std::invalid_argument(fmt::format("a rank summary of version {}, this gpudiag reads version {}",
                                              j["gpudiag_rank_summary"].dump(), kRankSummaryVersion));
    RankSummary s;
    s.path = j.at("path").get<std::string>();
    s.source = j.at("source").get<std::string>();
    const json& job = j.at("job");
    s.job.rank = job.at("rank").get<std::int32_t>();
    s.job.world_size = job.at("world_size").get<std::int32_t>();
    s.job.local_rank = job.at("local_rank").get<std::int32_t>();
    s.job.backend = job.at("backend").get<std::string>();
    s.job.launcher = job.at("launcher").get<std::string>();
    s.job.host = job.at("host").get<std::string>();
    s.pid = j.at("pid").get<std::int64_t>();
    s.exit_status = j.at("exit_status").get<std::int32_t>();
    s.clock = j.at("clock").get<std::string>();
    s.clock_uncertainty_ns = ns_of(j, "clock_uncertainty_ns");
    s.begin_ns = ns_of(j, "begin_ns");
    s.end_ns = ns_of(j, "end_ns");
    s.warnings = j.at("warnings").get<std::vector<std::string>>();
    for (const json& f : j.at("findings")) s.findings.push_back(finding_from_json(f));
    if (j.contains("failure")) {
      const json& f = j["failure"];
      s.failure = RankFailure{.kind = f.at("kind").get<std::string>(), .time_ns = ns_of(f, "time_ns"),
                              .what = f.at("what").get<std::string>(), .step = f.at("step").get<std::int64_t>(),
                              .stack = frames_from(f.at("stack"))};
    }
    for (const json& c : j.at("collectives"))
      s.collectives.push_back({.op = c.at("op").get<std::string>(), .group = c.at("group").get<std::string>(),
                               .seq = c.at("seq").get<std::int64_t>(),
                               .seq_from_source = c.at("seq_from_source").get<bool>(),
                               .bytes = c.at("bytes").get<std::uint64_t>(), .begin_ns = ns_of(c, "begin_ns"),
                               .end_ns = ns_of(c, "end_ns"), .unfinished = c.at("unfinished").get<bool>(),
                               .stack = frames_from(c.at("stack"))});
    // Summaries written before collectives were capped have none dropped.
    if (j.contains("collectives_dropped"))
      for (const json& d : j["collectives_dropped"]) {
        RankCollectivesDropped& dropped = s.collectives_dropped.emplace_back();
        dropped.group = d.at("group").get<std::string>();
        dropped.count = d.at("count").get<std::int64_t>();
        dropped.every = d.at("every").get<std::int64_t>();
        for (const json& sig : d.at("signatures")) dropped.signatures.push_back(hex_of(sig));
        if (dropped.every <= 0 || dropped.count != dropped.every * static_cast<std::int64_t>(dropped.signatures.size()))
          throw std::invalid_argument("collectives_dropped: the count is not the signatures' spacing times their number");
      }
    for (const json& st : j.at("steps"))
      s.steps.push_back({.number = st.at("number").get<std::int64_t>(), .begin_ns = ns_of(st, "begin_ns"),
                         .end_ns = ns_of(st, "end_ns"), .collective_ns = st.at("collective_ns").get<std::uint64_t>(),
                         .data_loading_ns = st.at("data_loading_ns").get<std::uint64_t>(),
                         .gpu_busy_ns = st.at("gpu_busy_ns").get<std::uint64_t>()});
    for (const json& p : j.at("peaks"))
      s.peaks.push_back({.device = p.at("device").get<std::int32_t>(), .bytes = p.at("bytes").get<std::uint64_t>()});
    for (const json& g : j.at("gpu_time"))
      s.gpu_time.push_back({.device = g.at("device").get<std::int32_t>(), .total_ns = g.at("total_ns").get<std::uint64_t>(),
                            .idle_ns = g.at("idle_ns").get<std::uint64_t>(),
                            .computation_ns = g.at("computation_ns").get<std::uint64_t>(),
                            .communication_ns = g.at("communication_ns").get<std::uint64_t>(),
                            .exposed_comm_ns = g.at("exposed_comm_ns").get<std::uint64_t>(),
                            .memcpy_ns = g.at("memcpy_ns").get<std::uint64_t>()});
    for (const RankStep& st : s.steps)
      if (st.end_ns < st.begin_ns) throw std::invalid_argument("a step that ends before it begins");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("not a gpudiag rank summary: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("not a gpudiag rank summary: {}", e.what()));
  } catch (const std::out_of_range& e) {
    throw std::runtime_error(fmt::format("not a gpudiag rank summary: {}", e.what()));
  }
}

}  // namespace gpudiag
