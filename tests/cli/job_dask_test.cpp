// What the workers of a job report on a Dask cluster run: `gpudiag report
// --rank-summary`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "scratch_dir.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::shell_quote;

const std::string kJob = GPUDIAG_SOURCE_DIR "/tests/import/data/ddp-gloo-2";

// gpudiag report ARGS in `dir`; stdout only unless `merge_stderr`.
CommandResult report(const std::string& args, const std::string& dir, bool merge_stderr = false,
                     const std::string& env = "") {
  return test::run_command("cd " + shell_quote(dir) + " && " + env + " " + shell_quote(GPUDIAG_EXE) + " report " + args,
                           merge_stderr);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The ranks of ddp-gloo-2 in `dir`/in, and a file that is no trace when `garbage`.
std::string job_copy(const std::string& name, bool garbage) {
  const std::string dir = test::scratch_dir(name);
  fs::create_directories(fs::path(dir) / "in");
  for (const fs::directory_entry& e : fs::directory_iterator(kJob)) fs::copy(e.path(), fs::path(dir) / "in");
  if (garbage) std::ofstream(fs::path(dir) / "in" / "rank2.kineto.json") << "not a trace\n";
  return dir;
}

// What a worker runs: the summary on stdout or in -o's file, and the rank's
// page, the one `gpudiag report --html` writes of the trace alone.
TEST(JobDask, RankSummaryWritesTheRanksPageWhenAsked) {
  const std::string dir = job_copy("rank_summary", false);
  const std::string trace = "in/rank1.kineto.json.gz";
  const CommandResult summary = report("--rank-summary --html summary.html -o summary.json " + trace, dir, true);
  ASSERT_EQ(summary.status, 0) << summary.out;
  EXPECT_EQ(nlohmann::json::parse(read_file(fs::path(dir) / "summary.json"))["path"], trace);
  ASSERT_EQ(report("--fail-on none --html alone.html " + trace, dir).status, 0);
  const std::string alone = read_file(fs::path(dir) / "alone.html");
  ASSERT_FALSE(alone.empty());
  EXPECT_EQ(read_file(fs::path(dir) / "summary.html"), alone);
  const CommandResult unwritable = report("--rank-summary --html no/such/folder/page.html " + trace, dir, true);
  EXPECT_EQ(unwritable.status, 2) << unwritable.out;
  EXPECT_NE(unwritable.out.find("gpudiag report: cannot write no/such/folder/page.html"), std::string::npos)
      << unwritable.out;
}

}  // namespace
}  // namespace gpudiag
