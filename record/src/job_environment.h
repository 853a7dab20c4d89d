// A process's place in a distributed job, as its launcher's environment
// variables say it. Read once when recording starts, so it must be safe in a
// child just forked: no allocation, no locale, only the lookup it is given
// (getenv).
#pragma once

#include <cstdint>

namespace gpudiag::rec::detail {

struct JobEnvironment {
  std::int32_t rank = -1;        // -1: not said
  std::int32_t local_rank = -1;  // -1: not said
  std::int32_t world_size = 0;   // 0: not said
  const char* launcher = "";     // whose variables said it; "" none
};

// The variables of one launcher.
struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* local_rank;
  const char* world_size;
};

// In order of precedence: torchrun's (torch.distributed's own, which it
// reads also under srun or mpirun, where the launcher's are set too), then
// Open MPI's, MPICH's (Hydra), Slurm's. Slurm's world is the step's tasks:
// an sbatch script also has SLURM_PROCID=0 and the job's SLURM_NTASKS, but
// it is the launcher, not rank 0, and it has no step.
inline constexpr LauncherVariables kLaunchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"mpich", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS"},
};

// A decimal number of at most 9 digits (no sign, no space), or -1.
inline std::int32_t parse_count(const char* s) noexcept {
  if (s == nullptr || *s == '\0') return -1;
  std::int32_t v = 0;
  int digits = 0;
  for (; *s != '\0'; ++s, ++digits) {
    if (*s < '0' || *s > '9' || digits == 9) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

// The first launcher whose variables give a rank below a world size; its
// local rank when that is a number below the world size too. Variables that
// are not numbers, or a rank not below the world size, say nothing.
template <class Lookup>
JobEnvironment job_environment(Lookup lookup) noexcept {
  for (const LauncherVariables& v : kLaunchers) {
    const std::int32_t rank = parse_count(lookup(v.rank));
    const std::int32_t size = parse_count(lookup(v.world_size));
    if (rank < 0 || size <= 0 || rank >= size) continue;
    const std::int32_t local = parse_count(lookup(v.local_rank));
    return {rank, local < size ? local : -1, size, v.launcher};
  }
  return {};
}

}  // namespace gpudiag::rec::detail
