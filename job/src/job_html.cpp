// The job page: report/page/job.html with report.css, the data and job.js
// spliced in, as the rank page is (report/src/html_page.cpp): names from the
// traces reach the page only as JSON that the script sets as text.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/job/job_report.h"
#include "gpudiag/report/report.h"
#include "job_parts.h"
#include "page_template.h"

namespace gpudiag {
namespace {

using nlohmann::json;

// Collectives drawn per rank: more would not show on a row of a page's width.
constexpr std::size_t kCollectivesDrawn = 4000;

double us(std::uint64_t ns, std::uint64_t origin) { return static_cast<double>(ns - std::min(ns, origin)) / 1e3; }

json stack_json(const std::vector<Frame>& frames) {
  Finding carrier;
  carrier.stack = frames;
  return to_json(carrier).value("stack", json::array());
}

std::string share(std::uint64_t part, std::uint64_t whole) {
  return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

json page_data(const JobReport& job, const std::vector<std::string>& rank_pages) {
  std::uint64_t begin = ~std::uint64_t{0}, end = 0;
  for (const RankSummary& s : job.ranks) begin = std::min(begin, s.begin_ns), end = std::max(end, s.end_ns);
  if (job.ranks.empty()) begin = 0;
  json d;
  d["summary"] = fmt::format("{} trace{}{}", job.ranks.size(), job.ranks.size() == 1 ? "" : "s",
                             job.world_size ? fmt::format(", world size {}", job.world_size) : std::string());
  d["problems"] = job.problems;
  json facts = json::array();
  for (const JobReport::Fact& f : job.facts) {
    json one = {{"id", f.id}, {"severity", std::string(to_string(f.severity))}, {"message", f.message}};
    json stacks = json::array();
    if (f.id == "desync" && job.desync)
      for (const Desync::Side& side : job.desync->sides)
        if (!side.stack.empty())
          stacks.push_back({{"label", detail::members(job, side.ranks) + ": " + side.call}, {"frames", stack_json(side.stack)}});
    if (f.id == "first-failure" && job.first_failure && !job.first_failure->failure.stack.empty())
      stacks.push_back({{"label", detail::members(job, {job.first_failure->rank})},
                        {"frames", stack_json(job.first_failure->failure.stack)}});
    one["stacks"] = std::move(stacks);
    facts.push_back(std::move(one));
  }
  d["facts"] = std::move(facts);
  json findings = json::array();
  for (const JobFinding& f : job.findings) {
    const Rule* rule = find_rule(f.finding.rule_id);
    findings.push_back({{"rule", rule ? rule_tag(*rule) : f.finding.rule_id},
                        {"severity", std::string(to_string(f.finding.severity))},
                        {"where", detail::members(job, f.ranks)},
                        {"message", f.finding.message},
                        {"stack", stack_json(f.finding.stack)}});
  }
  d["findings"] = std::move(findings);
  d["begin_us"] = 0.0;
  d["end_us"] = us(end, begin);
  json ranks = json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankSummary& s = job.ranks[i];
    json r;
    r["name"] = s.name();
    r["page"] = i < rank_pages.size() ? rank_pages[i] : std::string();
    r["begin_us"] = us(s.begin_ns, begin);
    r["end_us"] = us(s.end_ns, begin);
    json steps = json::array();
    std::vector<std::uint64_t> step, own, coll, loading;
    for (const RankStep& st : s.steps) {
      steps.push_back({us(st.begin_ns, begin), us(st.end_ns, begin), st.number});
      step.push_back(st.length()), own.push_back(st.own_ns()), coll.push_back(st.collective_ns),
          loading.push_back(st.data_loading_ns);
    }
    r["steps"] = std::move(steps);
    r["step_count"] = s.steps.size();
    r["median_step_us"] = static_cast<double>(detail::median(step)) / 1e3;
    r["median_own_us"] = static_cast<double>(detail::median(own)) / 1e3;
    r["median_collective_us"] = static_cast<double>(detail::median(coll)) / 1e3;
    r["median_data_loading_us"] = static_cast<double>(detail::median(loading)) / 1e3;
    // The longest collectives when there are too many to draw: the waits.
    std::vector<const RankCollective*> drawn;
    for (const RankCollective& c : s.collectives) drawn.push_back(&c);
    if (drawn.size() > kCollectivesDrawn) {
      std::nth_element(drawn.begin(), drawn.begin() + kCollectivesDrawn, drawn.end(),
                       [](auto* a, auto* b) { return a->end_ns - a->begin_ns > b->end_ns - b->begin_ns; });
      drawn.resize(kCollectivesDrawn);
    }
    json collectives = json::array(), labels = json::array();
    for (const RankCollective* c : drawn) {
      collectives.push_back({us(c->begin_ns, begin), us(c->end_ns, begin), labels.size()});
      labels.push_back(detail::collective_label(*c));
    }
    r["collectives"] = std::move(collectives);
    r["collective_labels"] = std::move(labels);
    r["failure_us"] = s.failure ? json(us(s.failure->time_ns, begin)) : json(nullptr);
    r["failure"] = s.failure ? fmt::format("{}: {}", s.failure->kind, s.failure->what) : std::string();
    r["ended"] = s.failure ? s.failure->kind : s.exit_status >= 0 ? fmt::format("exit {}", s.exit_status) : "-";
    r["peak_bytes"] = s.peak_bytes();
    std::uint64_t total = 0, idle = 0, exposed = 0;
    for (const RankGpuTime& g : s.gpu_time) total += g.total_ns, idle += g.idle_ns, exposed += g.exposed_comm_ns;
    r["gpu_idle"] = share(idle, total);
    r["exposed_comm"] = share(exposed, total);
    ranks.push_back(std::move(r));
  }
  d["ranks"] = std::move(ranks);
  return d;
}

}  // namespace

void write_job_html(std::ostream& out, const JobReport& job, const std::vector<std::string>& rank_pages) {
  const detail::PageTemplate page = detail::cut_page_template(detail::page_file("job.html"));
  out << page.to_css << detail::page_file("report.css") << page.to_data << json_for_script(page_data(job, rank_pages))
      << page.to_script << detail::page_file("common.js") << detail::page_file("job.js") << page.rest;
}

}  // namespace gpudiag
