// The Identity chunk a recording starts with: the host, the pid, the place in
// a distributed job that the launcher's variables say, and the trace's clock
// against the UNIX epoch, so that the traces of a job's ranks, on one host or
// several, can be told apart and put on one time line. Written from start(),
// which may run in a child just forked: nothing here allocates.
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "identity_payload.h"
#include "job_environment.h"
#include "recorder_state.h"

namespace gpudiag::rec::detail {
namespace {

std::int64_t ns_of(const timespec& ts) noexcept {
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + static_cast<std::int64_t>(ts.tv_nsec);
}

struct EpochOffset {
  bool known = false;
  std::int64_t offset_ns = 0;
  std::uint64_t uncertainty_ns = 0;
};

// CLOCK_REALTIME read between two reads of the trace's clock (now_ns's
// CLOCK_MONOTONIC): it was read at some time between those two, so taking
// their middle errs by at most half the gap. Of a few tries, the one with
// the smallest gap (a try the scheduler interrupted has a large one).
EpochOffset epoch_offset() noexcept {
  EpochOffset best;
  std::uint64_t best_gap = ~std::uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    timespec before{}, real{}, after{};
    if (clock_gettime(CLOCK_MONOTONIC, &before) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_MONOTONIC, &after) != 0)
      continue;
    const auto gap = static_cast<std::uint64_t>(ns_of(after) - ns_of(before));
    if (gap >= best_gap) continue;
    best_gap = gap;
    best = {true, ns_of(real) - (ns_of(before) + static_cast<std::int64_t>(gap / 2)), (gap + 1) / 2};
  }
  return best;
}

}  // namespace

void write_identity(Recorder& r) noexcept {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const JobEnvironment job = job_environment([](const char* name) -> const char* { return std::getenv(name); });
  const EpochOffset clock = epoch_offset();
  const gdtrace::IdentityPayload id{.pid = static_cast<std::int64_t>(r.pid),
                                    .rank = job.rank,
                                    .local_rank = job.local_rank,
                                    .world_size = job.world_size,
                                    .flags = clock.known ? gdtrace::kEpochOffsetKnown : 0,
                                    .epoch_offset_ns = clock.offset_ns,
                                    .epoch_offset_uncertainty_ns = clock.uncertainty_ns,
                                    .launcher = job.launcher,
                                    .host = std::string_view(host, std::strlen(host)),
                                    .backend = {}};
  char payload[gdtrace::kIdentityHead + sizeof host + 16];
  if (const std::size_t size = gdtrace::encode_identity(id, payload, sizeof payload); size != 0)
    write_small_chunk(r.fd, gdtrace::ChunkType::Identity, payload, static_cast<std::uint32_t>(size));
}

}  // namespace gpudiag::rec::detail
