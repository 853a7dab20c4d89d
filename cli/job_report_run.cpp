#include "job_report_run.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "dask_ranks.h"
#include "gpudiag/job/analyse_ranks.h"
#include "gpudiag/job/job_report.h"

namespace gpudiag::cli {
namespace {

namespace fs = std::filesystem;

// Writes to `path` ("" stdout) through `write`; false with a message when it cannot.
template <class Write>
bool write_to(const std::string& path, Write&& write) {
  if (path.empty()) {
    write(std::cout);
    return true;
  }
  std::ofstream file(path, std::ios::binary);
  if (!file) {
    std::cerr << fmt::format("gpudiag report: cannot write {}\n", path);
    return false;
  }
  write(file);
  return true;
}

}  // namespace

int run_job_report(const JobReportOptions& o) {
  std::vector<std::string> paths;
  try {
    paths = expand_trace_inputs(o.inputs);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("gpudiag report: {}\n", e.what());
    return 2;
  }
  AnalyseRanksOptions analyse;
  analyse.load = o.load;
  analyse.workers = o.workers;
  if (!o.html.empty()) {
    analyse.html_dir = o.html + ".ranks";
    std::error_code ec;
    fs::create_directories(analyse.html_dir, ec);
    if (ec) {
      std::cerr << fmt::format("gpudiag report: cannot create {}: {}\n", analyse.html_dir, ec.message());
      return 2;
    }
  }
  RankAnalysis ranks;
  if (o.dask.empty()) {
    ranks = analyse_ranks(paths, analyse);
  } else {
    try {
      ranks = analyse_ranks_on_dask(paths, {.scheduler = o.dask, .workers = o.workers,
                                            .memory_bytes = o.load.memory_bytes, .rank_args = o.rank_args,
                                            .html_dir = analyse.html_dir});
    } catch (const std::exception& e) {
      std::cerr << fmt::format("gpudiag report: {}\n", e.what());
      return 2;
    }
  }
  if (ranks.summaries.empty()) {
    for (const std::string& e : ranks.errors) std::cerr << fmt::format("gpudiag report: {}\n", e);
    std::cerr << "gpudiag report: no trace of the job could be read\n";
    return 2;
  }
  // Links from the job page to each rank's, relative so the pages move together.
  std::vector<std::string> pages;
  const fs::path html_parent = fs::path(o.html).parent_path();
  std::vector<std::pair<std::string, std::string>> page_of;  // trace path -> page
  for (std::size_t i = 0; i < ranks.summaries.size(); ++i)
    page_of.emplace_back(ranks.summaries[i].path,
                         ranks.pages[i].empty() ? std::string()
                                                : fs::relative(ranks.pages[i], html_parent.empty() ? "." : html_parent)
                                                      .generic_string());
  JobReport job = merge_job(std::move(ranks.summaries));
  for (const std::string& e : ranks.errors) job.problems.push_back("could not read " + e);
  for (const RankSummary& s : job.ranks)
    for (const auto& [path, page] : page_of)
      if (path == s.path) pages.push_back(page);

  const bool written = write_to(o.output, [&](std::ostream& out) {
    if (o.json)
      out << job_json(job).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    else if (o.sarif)
    {
      SarifOptions sarif;
      sarif.tool_version = GPUDIAG_VERSION;
      emit_job_sarif(out, job, sarif);
    }
    else
      print_job_summary(out, job, o.color && o.output.empty());
  });
  if (!written) return 2;
  if (!o.html.empty()) {
    if (!write_to(o.html, [&](std::ostream& out) { write_job_html(out, job, pages); })) return 2;
    if (!o.json && !o.sarif && o.output.empty()) std::cout << fmt::format("HTML job report: {}\n", o.html);
  }
  const std::optional<Severity> worst = worst_severity(job);
  return o.fail_on && worst && *worst >= *o.fail_on ? 1 : 0;
}

int run_rank_summary(const std::string& input, const std::string& output, const std::string& html,
                     const LoadOptions& load) {
  RankSummary summary;
  try {
    const AnalysedTrace analysed = load_and_analyze(input, load);
    summary = summarize_rank(analysed.trace, analysed.report);
    if (!html.empty() && !write_to(html, [&](std::ostream& out) { write_html(out, analysed.trace, analysed.report); }))
      return 2;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("gpudiag report: {}\n", e.what());
    return 2;
  }
  return write_to(output, [&](std::ostream& out) {
           out << to_json(summary).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
         })
             ? 0
             : 2;
}

}  // namespace gpudiag::cli
