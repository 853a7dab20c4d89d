// The place in a distributed job that a launcher's variables say: each
// launcher's own, torchrun's first, and variables that are not a rank below
// a world size say nothing.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "job_environment.h"

namespace gpudiag::rec::detail {
namespace {

using Env = std::map<std::string, std::string>;

JobEnvironment place(const Env& env) {
  return job_environment([&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

void expect_place(const Env& env, std::int32_t rank, std::int32_t local_rank, std::int32_t world_size,
                  const std::string& launcher) {
  const JobEnvironment p = place(env);
  EXPECT_EQ(p.rank, rank);
  EXPECT_EQ(p.local_rank, local_rank);
  EXPECT_EQ(p.world_size, world_size);
  EXPECT_EQ(std::string(p.launcher), launcher);
}

TEST(JobEnvironment, EachLauncherSaysThePlaceWithItsOwnVariables) {
  expect_place({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}, 3, 1, 8, "torchrun");
  expect_place({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "6"}}, 5,
               1, 6, "openmpi");
  expect_place({{"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "4"}}, 2, 0, 4, "mpich");
  expect_place({{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_STEP_NUM_TASKS", "16"}}, 7, 3, 16, "slurm");
}

// sbatch's batch script is the job's launcher, not its rank 0: Slurm sets
// SLURM_PROCID=0 and the job's SLURM_NTASKS there too, but only srun's tasks
// have a step, and the step's task count.
TEST(JobEnvironment, ASlurmBatchScriptIsNoRank) {
  expect_place({{"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "200505"}},
               -1, -1, 0, "");
  expect_place({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_STEP_NUM_TASKS", "8"}}, 5, -1, 8, "slurm");
}

TEST(JobEnvironment, NoLaunchersVariablesSayNothing) {
  expect_place({}, -1, -1, 0, "");
  expect_place({{"LOCAL_RANK", "0"}}, -1, -1, 0, "");
  {
    SCOPED_TRACE("a rank without a world size");
    expect_place({{"RANK", "0"}}, -1, -1, 0, "");
  }
  {
    SCOPED_TRACE("a world size without a rank");
    expect_place({{"WORLD_SIZE", "2"}}, -1, -1, 0, "");
  }
}

// PyTorch reads torchrun's variables also under srun and mpirun, where the
// launcher's own are set beside them (and may count differently).
TEST(JobEnvironment, TorchrunsVariablesComeFirstThenOpenMpiMpichAndSlurm) {
  const Env all = {{"RANK", "1"},         {"WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "5"},
                   {"PMI_RANK", "3"},     {"PMI_SIZE", "6"},
                   {"SLURM_PROCID", "4"}, {"SLURM_STEP_NUM_TASKS", "7"}};
  expect_place(all, 1, -1, 4, "torchrun");
  Env env = all;
  env.erase("RANK");
  expect_place(env, 2, -1, 5, "openmpi");
  env.erase("OMPI_COMM_WORLD_SIZE");
  expect_place(env, 3, -1, 6, "mpich");
  env.erase("PMI_RANK");
  expect_place(env, 4, -1, 7, "slurm");
}

// Garbage is not said: the next launcher's variables may still say the place.
TEST(JobEnvironment, VariablesThatAreNotARankBelowAWorldSizeSayNothing) {
  for (const std::string rank : {"", "x", "1x", " 1", "1 ", "+1", "-1", "0x1", "1.0", "4", "9", "1234567890"}) {
    SCOPED_TRACE("RANK='" + rank + "'");
    expect_place({{"RANK", rank}, {"WORLD_SIZE", "4"}}, -1, -1, 0, "");
    expect_place({{"RANK", rank}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "2"}, {"SLURM_STEP_NUM_TASKS", "3"}}, 2, -1, 3, "slurm");
  }
  for (const std::string size : {"", "0", "-4", "four", "4.0", "99999999999"}) {
    SCOPED_TRACE("WORLD_SIZE='" + size + "'");
    expect_place({{"RANK", "0"}, {"WORLD_SIZE", size}}, -1, -1, 0, "");
  }
  {
    SCOPED_TRACE("one process is a world too");
    expect_place({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, 0, -1, 1, "torchrun");
  }
  {
    SCOPED_TRACE("leading zeros are still decimal");
    expect_place({{"RANK", "007"}, {"WORLD_SIZE", "008"}}, 7, -1, 8, "torchrun");
  }
}

// A local rank that is garbage is not said; the rank still is.
TEST(JobEnvironment, ALocalRankThatIsNotANumberBelowTheWorldSizeIsNotSaid) {
  for (const std::string local : {"", "a", "-1", "4", "12"}) {
    SCOPED_TRACE("LOCAL_RANK='" + local + "'");
    expect_place({{"RANK", "1"}, {"LOCAL_RANK", local}, {"WORLD_SIZE", "4"}}, 1, -1, 4, "torchrun");
  }
  expect_place({{"RANK", "1"}, {"LOCAL_RANK", "3"}, {"WORLD_SIZE", "4"}}, 1, 3, 4, "torchrun");
}

}  // namespace
}  // namespace gpudiag::rec::detail
