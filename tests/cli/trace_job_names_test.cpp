// `gpudiag trace` on the processes of a distributed job: each trace says the
// process's exit status, and `-o DIR` names each process's trace by its rank
// (the launcher, which has none, as the launcher), removes an earlier run's
// rank files, and keeps pid names for two traces that say one rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace.h"
#include "gpudiag_cli.h"
#include "run_command.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::fresh_dir;
using test::gpudiag;

// The command run with no launcher's variables (the machine running the
// tests may be a job's process itself): `env -u ...` execs it, same pid.
std::vector<std::string> without_launcher_variables(std::vector<std::string> command) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "SLURM_PROCID",
                        "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS"})
    argv.insert(argv.end(), {"-u", v});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> gdtrace_files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".gdtrace") names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A process that exits says its status in its trace, and its report says it.
TEST(TraceCommand, TheTraceSaysTheStatusTheProcessExitedWith) {
  const std::string dir = fresh_dir("exit-status");
  const CliRun r = gpudiag({"trace", "-o", "run.gdtrace", "--", TRACED_PROGRAM, "3"}, dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(load_trace(dir + "/run.gdtrace").exit_status, 3);
  EXPECT_NE(r.err.find("the process exited with status 3"), std::string::npos) << r.err;
}

// `-o DIR`: the two ranks the command launches (as torchrun does) are
// named by their rank, and the launcher, which has none, as the launcher.
TEST(TraceCommand, TheProcessesOfAJobAreNamedByTheirRankAndTheLauncherAsSuch) {
  const std::string dir = fresh_dir("ranks");
  fs::create_directory(dir + "/runs");
  std::vector<std::string> args = {"trace", "-o", "runs/", "--"};
  for (const auto& a : without_launcher_variables({TRACED_PROGRAM, "0", "launch"})) args.push_back(a);
  const CliRun r = gpudiag(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(gdtrace_files(dir + "/runs"), (std::vector<std::string>{"launcher.gdtrace", "rank0.gdtrace", "rank1.gdtrace"}))
      << r.err;
  const Trace launcher = load_trace(dir + "/runs/launcher.gdtrace");
  EXPECT_FALSE(launcher.job.known());
  EXPECT_EQ(launcher.exit_status, 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = "runs/rank" + std::to_string(rank) + ".gdtrace";  // as -o named it
    const Trace t = load_trace(dir + "/" + path);
    EXPECT_EQ(t.job.rank, rank);
    EXPECT_EQ(t.job.local_rank, rank);
    EXPECT_EQ(t.job.world_size, 2);
    EXPECT_EQ(t.job.launcher, "torchrun");
    EXPECT_EQ(t.allocs.size(), 100u);
    EXPECT_NE(r.err.find(fmt::format("{} (pid {}, rank {} of 2): 100 events", path, t.pid, rank)), std::string::npos)
        << r.err;
    EXPECT_NE(t.pid, launcher.pid);
  }
  // The launcher's first, then the ranks in order.
  const auto at = [&](const char* name) { return r.err.find(std::string("  runs/") + name + " (pid"); };
  EXPECT_LT(at("launcher.gdtrace"), at("rank0.gdtrace")) << r.err;
  EXPECT_LT(at("rank0.gdtrace"), at("rank1.gdtrace")) << r.err;
}

// An earlier run's rank and launcher files, and what sat beside them, go:
// no report may take them for this run's ranks.
TEST(TraceCommand, AnEarlierRunsRankFilesGo) {
  const std::string dir = fresh_dir("stale-ranks");
  const std::string runs = dir + "/runs";
  fs::create_directory(runs);
  for (const char* name : {"rank0.gdtrace.torch-memory.json", "rank5.gdtrace", "rank5.gdtrace.torch-oom.pickle",
                           "rank5.gdtrace.html", "launcher.gdtrace", "notes.txt"}) {
    std::ofstream(runs + "/" + name) << "an earlier run's";
    fs::last_write_time(runs + "/" + name, fs::file_time_type::clock::now() - std::chrono::hours(1));
  }
  std::vector<std::string> args = {"trace", "-o", "runs", "--"};
  for (const auto& a : without_launcher_variables({TRACED_PROGRAM, "0", "launch"})) args.push_back(a);
  const CliRun r = gpudiag(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(gdtrace_files(runs), (std::vector<std::string>{"launcher.gdtrace", "rank0.gdtrace", "rank1.gdtrace"}));
  for (const char* gone : {"rank0.gdtrace.torch-memory.json", "rank5.gdtrace.torch-oom.pickle", "rank5.gdtrace.html"})
    EXPECT_FALSE(fs::exists(runs + "/" + gone)) << gone;
  EXPECT_TRUE(fs::exists(runs + "/notes.txt")) << "not a file gpudiag names";
  EXPECT_EQ(load_trace(runs + "/launcher.gdtrace").allocs.size(), 100u) << "this run's launcher";
}

// Two processes that say one rank (a script that set RANK itself, twice):
// neither takes the name, and gpudiag says why.
TEST(TraceCommand, TwoTracesThatSayOneRankKeepTheirPidNamesWithAWarning) {
  const std::string dir = fresh_dir("same-rank");
  fs::create_directory(dir + "/runs");
  const std::string program = TRACED_PROGRAM;
  const std::string script = "RANK=1 WORLD_SIZE=2 " + program + " 0 & RANK=1 WORLD_SIZE=2 " + program + " 0; wait";
  std::vector<std::string> args = {"trace", "-o", "runs", "--"};
  for (const auto& a : without_launcher_variables({"/bin/sh", "-c", script})) args.push_back(a);
  const CliRun r = gpudiag(args, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> names = gdtrace_files(dir + "/runs");
  ASSERT_EQ(names.size(), 2u) << r.err;
  for (const auto& name : names) {
    EXPECT_TRUE(name.starts_with("trace.")) << name;
    EXPECT_EQ(load_trace(dir + "/runs/" + name).job.rank, 1);
  }
  // Named in the order of their pids.
  const auto pid_of = [](const std::string& name) { return std::stoll(name.substr(6)); };
  const auto [first, second] = pid_of(names[0]) < pid_of(names[1]) ? std::pair(names[0], names[1])
                                                                    : std::pair(names[1], names[0]);
  EXPECT_NE(r.err.find("  warning: 2 traces say rank 1 (" + first + ", " + second + "): they keep their pid names\n"),
            std::string::npos)
      << r.err;
}

// gdrt's UNet trained by two ranks on emu, as torchrun would start them:
// DIR/rank0.gdtrace and DIR/rank1.gdtrace, whose reports say their places.
TEST(TraceCommand, TwoRanksOfTheUNetOnEmuGetTracesNamedByRankWhoseReportsSayIt) {
  if (std::string(TRAIN_UNET_EXE).empty()) GTEST_SKIP() << "the UNet sample was not built";
  const std::string dir = fresh_dir("unet-ranks");
  fs::create_directory(dir + "/runs");
  const std::string train = std::string(TRAIN_UNET_EXE) + " --epochs 1 --train 8 --val 4 --size 16 --checkpoint ''";
  const std::string script = "export WORLD_SIZE=2; RANK=0 LOCAL_RANK=0 " + train + " & RANK=1 LOCAL_RANK=1 " + train +
                             " & wait";
  std::vector<std::string> args = {"trace", "-o", "runs/", "--"};
  for (const auto& a : without_launcher_variables({"/bin/sh", "-c", script})) args.push_back(a);
  const CliRun r = gpudiag(args, dir, {"GDRT_DEVICE=emu"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(gdtrace_files(dir + "/runs"), (std::vector<std::string>{"rank0.gdtrace", "rank1.gdtrace"})) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string trace = "runs/rank" + std::to_string(rank) + ".gdtrace";
    const Trace t = load_trace(dir + "/" + trace);
    EXPECT_GT(t.kernels.size(), 0u) << "a real training run";
    EXPECT_EQ(t.exit_status, 0);
    const test::CommandResult report =
        test::run_command(std::string(GPUDIAG_EXE) + " report --no-color " + test::shell_quote(dir + "/" + trace));
    EXPECT_EQ(report.status, 0) << report.out;
    EXPECT_NE(report.out.find(fmt::format("rank {} of 2 of a distributed job, local rank {}, launcher torchrun, host ",
                                          rank, rank)),
              std::string::npos)
        << report.out;
    EXPECT_NE(report.out.find("the process exited with status 0"), std::string::npos) << report.out;
  }
}

}  // namespace
}  // namespace gpudiag
