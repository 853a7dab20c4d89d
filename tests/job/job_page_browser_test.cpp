// The job page in real headless Chromium: it loads with no console errors,
// leads with the job's failure, lists every rank with a link to its own
// page, and shows names from traces as text, never as markup.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpudiag/job/job_report.h"
#include "job_builder.h"
#include "run_command.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
constexpr const char* kChromium = "/usr/bin/chromium";

struct Page {
  std::string dom, console;
};

Page load(const fs::path& html) {
  const fs::path log = html.string() + ".log";
  Page p;
  p.dom = test::run_command("timeout 120 " + std::string(kChromium) +
                                " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
                                "--window-size=1400,1000 --dump-dom 'file://" +
                                html.string() + "' 2>'" + log.string() + "'",
                            false)
              .out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos) p.console += line + "\n";
  return p;
}

TEST(JobPageInBrowser, LeadsWithTheFailureAndLinksEveryRank) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed (apt-get install chromium)";
  std::vector<RankSummary> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(test::rank_running(r, 4, {.steps = 5}));
  ranks[2].failure = RankFailure{.kind = "crash", .time_ns = test::ms(250), .what = "SIGSEGV <img src=x onerror=alert(1)>",
                                 .step = 2, .stack = {}};
  ranks[1].findings.push_back(test::finding("GD010", Severity::Warning, "syncs <b>bold</b>", "train_step"));
  const JobReport job = merge_job(std::move(ranks));
  const fs::path dir = fs::path(GPUDIAG_BINARY_DIR) / "tests" / "job" / "browser";
  fs::create_directories(dir);
  const fs::path html = dir / "job.html";
  {
    std::ofstream out(html, std::ios::binary);
    write_job_html(out, job, {"job.html.ranks/rank0.gdtrace.html", "", "", ""});
  }
  const Page page = load(html);
  EXPECT_EQ(page.console, "");
  EXPECT_NE(page.dom.find("rank 2 failed first in step 2"), std::string::npos) << page.dom.substr(0, 3000);
  EXPECT_LT(page.dom.find("failed first"), page.dom.find("Findings: 1"));  // the job's failure leads
  EXPECT_NE(page.dom.find("href=\"job.html.ranks/rank0.gdtrace.html\""), std::string::npos);
  for (int r = 0; r < 4; ++r) EXPECT_NE(page.dom.find("<td>rank " + std::to_string(r) + "</td>"), std::string::npos);
  EXPECT_EQ(page.dom.find("<img src=\"x\""), std::string::npos);  // text, not markup
  EXPECT_EQ(page.dom.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(page.dom.find("&lt;b&gt;bold&lt;/b&gt;"), std::string::npos);
  std::size_t canvases = 0;
  for (std::size_t at = 0; (at = page.dom.find("<canvas", at)) != std::string::npos; ++at) ++canvases;
  EXPECT_EQ(canvases, 4u);  // one row per rank
}

}  // namespace
}  // namespace gpudiag
