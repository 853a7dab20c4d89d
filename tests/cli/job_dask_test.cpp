// `gpudiag report --dask`: each rank analysed as a task on a Dask cluster (a
// local one, or one a scheduler file names), the job report the same as the
// local threads make; a trace that fails is that trace's error; a cluster
// that cannot be used is exit 2 and one line that says why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gpudiag/trace_io.h"
#include "run_command.h"
#include "scratch_dir.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;
using test::shell_quote;

const std::string kJob = GPUDIAG_SOURCE_DIR "/tests/import/data/ddp-gloo-2";

// The Python gpudiag runs the Dask driver with, as it finds it.
bool have_dask() {
  return std::system("/usr/bin/python3 -c 'import distributed' >/dev/null 2>&1") == 0;
}
#define NEED_DASK() \
  if (!have_dask()) GTEST_SKIP() << "/usr/bin/python3 cannot import distributed (apt install python3-distributed)"

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

TEST(JobDask, LocalClusterJsonReportIsTheLocalOne) {
  NEED_DASK();
  const std::string dir = job_copy("same", false);
  const CommandResult threads = report("--json in", dir);
  const CommandResult dask = report("--json --dask local --jobs 2 in", dir);
  ASSERT_EQ(threads.status, 0) << threads.out;
  ASSERT_EQ(dask.status, 0) << dask.out;
  // Byte for byte: the paths the summaries name are the ones given, as are
  // their order and every number.
  EXPECT_EQ(dask.out, threads.out);
  EXPECT_EQ(nlohmann::json::parse(dask.out)["ranks"].size(), 2u);
}

TEST(JobDask, ATraceThatFailsIsItsErrorAndTheOthersAreMerged) {
  NEED_DASK();
  const std::string dir = job_copy("garbage", true);
  const CommandResult threads = report("--json in", dir);
  const CommandResult dask = report("--json --dask local --jobs 2 in", dir);
  ASSERT_EQ(threads.status, 0) << threads.out;
  ASSERT_EQ(dask.status, 0) << dask.out;
  nlohmann::json local = nlohmann::json::parse(threads.out), tasks = nlohmann::json::parse(dask.out);
  EXPECT_EQ(tasks["ranks"].size(), 2u);
  ASSERT_EQ(local["job"]["problems"].size(), 1u);
  ASSERT_EQ(tasks["job"]["problems"].size(), 1u);
  // The local error, then the worker it happened on.
  const std::string local_error = local["job"]["problems"][0], task_error = tasks["job"]["problems"][0];
  EXPECT_TRUE(local_error.starts_with("could not read in/rank2.kineto.json: ")) << local_error;
  EXPECT_TRUE(task_error.starts_with(local_error + " (Dask worker ")) << task_error;
  // All else is the same.
  local["job"]["problems"] = tasks["job"]["problems"] = nullptr;
  EXPECT_EQ(tasks, local);
}

TEST(JobDask, RankPagesAreWrittenByTheTasksAsByTheThreads) {
  NEED_DASK();
  const std::string dir = job_copy("html", false);
  fs::create_directories(fs::path(dir) / "a");
  fs::create_directories(fs::path(dir) / "b");
  ASSERT_EQ(report("--html job.html ../in", dir + "/a").status, 0);
  const CommandResult dask = report("--html job.html --dask local ../in", dir + "/b", true);
  ASSERT_EQ(dask.status, 0) << dask.out;
  for (const char* page :
       {"job.html", "job.html.ranks/rank0.kineto.json.gz.html", "job.html.ranks/rank1.kineto.json.gz.html"}) {
    SCOPED_TRACE(page);
    const std::string threads = read_file(fs::path(dir) / "a" / page);
    ASSERT_FALSE(threads.empty());
    EXPECT_EQ(read_file(fs::path(dir) / "b" / page), threads);
  }
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

// Two traces whose Float64 kernels take 1% of kernel time: a note by
// default, warnings under --float64-share 0.005.
std::string float64_job() {
  const std::string dir = test::scratch_dir("float64");
  for (int rank = 0; rank < 2; ++rank) {
    Trace t;
    t.source = TraceSource::Gdtrace;
    testing::kernel(t, 0, 5'000, "void axpy<double>(double*, double const*, int)");
    testing::kernel(t, 5'000, 10'000, "void scale<double>(double*, int)");
    testing::kernel(t, 10'000, 1'000'000, "void relu<float>(float*)");
    write_gdtrace(t, dir + "/rank" + std::to_string(rank) + ".gdtrace");
  }
  return dir;
}

TEST(JobDask, TheWorkersAnalyseWithTheReportsThresholds) {
  NEED_DASK();
  const std::string dir = float64_job();
  const CommandResult threads = report("--json --fail-on none --float64-share 0.005 .", dir);
  const CommandResult dask = report("--json --fail-on none --float64-share 0.005 --dask local .", dir);
  const CommandResult dask_default = report("--json --fail-on none --dask local .", dir);
  ASSERT_EQ(threads.status, 0) << threads.out;
  ASSERT_EQ(dask.status, 0) << dask.out;
  ASSERT_EQ(dask_default.status, 0) << dask_default.out;
  EXPECT_EQ(dask.out, threads.out);
  const nlohmann::json strict = nlohmann::json::parse(dask.out), lenient = nlohmann::json::parse(dask_default.out);
  ASSERT_FALSE(strict["findings"].empty());
  ASSERT_FALSE(lenient["findings"].empty());
  EXPECT_EQ(strict["findings"][0]["severity"], "warning") << dask.out;
  EXPECT_EQ(lenient["findings"][0]["severity"], "note") << dask_default.out;
}

TEST(JobDask, ASchedulerFileNamesTheClusterToUse) {
  NEED_DASK();
  const std::string dir = job_copy("scheduler_file", false);
  const std::string file = dir + "/scheduler.json", log = dir + "/cluster.log";
  // The cluster lives until its standard input, this pipe, closes.
  FILE* cluster = popen(("/usr/bin/python3 " + shell_quote(DASK_CLUSTER_SCRIPT) + " " + shell_quote(file) + " >" +
                         shell_quote(log) + " 2>&1")
                            .c_str(),
                        "w");
  ASSERT_NE(cluster, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  // Written whole: the scheduler writes it, then its address is in it.
  while (read_file(file).find("tcp://") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const bool started = read_file(file).find("tcp://") != std::string::npos;
  const CommandResult dask = report("--json --dask scheduler.json in", dir, true);
  const CommandResult threads = report("--json in", dir);
  pclose(cluster);  // the scheduler removes its file as it closes
  ASSERT_TRUE(started) << "the cluster did not start: " << read_file(log);
  ASSERT_EQ(dask.status, 0) << dask.out;
  EXPECT_EQ(dask.out, threads.out);
}

TEST(JobDask, AMissingSchedulerFileIsExitTwoAndSaysSo) {
  const std::string dir = job_copy("no_scheduler_file", false);
  const CommandResult r = report("--json --dask nowhere/scheduler.json in", dir, true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("gpudiag report: --dask nowhere/scheduler.json: no such scheduler file"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('{'), std::string::npos) << "no report: " << r.out;
}

TEST(JobDask, NoPythonOrNoDaskIsExitTwoAndNamesTheDebianPackage) {
  const std::string dir = job_copy("no_dask", false);
  const CommandResult missing = report("--dask local in", dir, true, "GPUDIAG_PYTHON=/nonexistent/python3");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/python3 cannot be run"), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("apt install python3-distributed"), std::string::npos) << missing.out;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 to run without its site packages";
  // A python3 that does not see Debian's packages (python3 -S): no dask.distributed.
  const std::string bare = dir + "/python3-bare";
  std::ofstream(bare) << "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n";
  fs::permissions(bare, fs::perms::owner_all);
  const CommandResult no_dask = report("--dask local in", dir, true, "GPUDIAG_PYTHON=" + shell_quote(bare));
  EXPECT_EQ(no_dask.status, 2) << no_dask.out;
  EXPECT_NE(no_dask.out.find("--dask needs dask.distributed, which " + bare + " cannot import"), std::string::npos)
      << no_dask.out;
  EXPECT_NE(no_dask.out.find("apt install python3-distributed"), std::string::npos) << no_dask.out;
}

}  // namespace
}  // namespace gpudiag
