// analyse_ranks: a pool of workers, each taking the next trace, so that one
// slow rank (the largest trace) does not hold up a fixed share of the rest.
#include "gpudiag/job/analyse_ranks.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace gpudiag {

RankSummary summarize_trace(const std::string& path, const LoadOptions& load) {
  const AnalysedTrace analysed = load_and_analyze(path, load);
  return summarize_rank(analysed.trace, analysed.report);
}

RankAnalysis analyse_ranks(const std::vector<std::string>& paths, const AnalyseRanksOptions& options) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned workers = std::max<unsigned>(
      1, std::min<unsigned>(options.workers ? options.workers : cores, static_cast<unsigned>(paths.size())));
  LoadOptions load = options.load;
  load.progress = nullptr;  // stage messages from several traces at once would interleave
  if (load.memory_bytes != 0) load.memory_bytes = std::max<std::uint64_t>(load.memory_bytes / workers, 1);

  std::vector<std::optional<RankSummary>> summaries(paths.size());
  std::vector<std::string> pages(paths.size()), errors(paths.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < paths.size();) {
      try {
        const AnalysedTrace analysed = load_and_analyze(paths[i], load);
        summaries[i] = summarize_rank(analysed.trace, analysed.report);
        if (!options.html_dir.empty()) {
          const std::string page =
              (std::filesystem::path(options.html_dir) / (std::filesystem::path(paths[i]).filename().string() + ".html"))
                  .string();
          std::ofstream html(page, std::ios::binary);
          if (!html) throw TraceError(fmt::format("cannot write {}", page));
          write_html(html, analysed.trace, analysed.report);
          pages[i] = page;
        }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  RankAnalysis out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (summaries[i]) {
      out.summaries.push_back(std::move(*summaries[i]));
      out.pages.push_back(pages[i]);
    }
    if (!errors[i].empty()) out.errors.push_back(errors[i].starts_with(paths[i]) ? errors[i] : paths[i] + ": " + errors[i]);
  }
  return out;
}

}  // namespace gpudiag
