// A recording says who recorded it: the Identity chunk the recorder writes at
// start (host, pid, the place in a job that a launcher's variables give, the
// clock's offset to the epoch), read back through the .gdtrace reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpudiag/record.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

namespace rec = gpudiag::rec;

// Sets environment variables for one test and puts back what was there.
class ScopedEnv {
 public:
  // Unset: a launcher's variables, which the machine running the tests may have.
  ScopedEnv(const std::vector<std::pair<std::string, std::string>>& set, const std::vector<std::string>& unset) {
    for (const auto& name : unset) keep(name), unsetenv(name.c_str());
    for (const auto& [name, value] : set) keep(name), setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_)
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
  }

 private:
  void keep(const std::string& name) {
    const char* v = getenv(name.c_str());
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

const std::vector<std::string> kLauncherVariables = {
    "RANK",     "LOCAL_RANK",      "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS"};

std::int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A recording says who recorded it: the host, the pid, the place its
// launcher's variables give, and its clock against the epoch.
TEST(Recorder, ATraceSaysItsHostPidPlaceInTheJobAndClockOffset) {
  const ScopedEnv env({{"RANK", "1"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}}, kLauncherVariables);
  const std::string path = test::temp_path("identity.gdtrace");
  const std::int64_t offset_before = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  ASSERT_TRUE(rec::start(path.c_str()));
  rec::stop();
  const std::int64_t offset_after = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  const Trace t = read_gdtrace(path);
  EXPECT_EQ(t.pid, getpid());
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(t.job.host, host);
  EXPECT_EQ(t.job.rank, 1);
  EXPECT_EQ(t.job.local_rank, 1);
  EXPECT_EQ(t.job.world_size, 4);
  EXPECT_EQ(t.job.launcher, "torchrun");
  EXPECT_EQ(t.job.backend, "") << "the recorder does not know the process group's backend";
  ASSERT_TRUE(t.job.epoch_offset_known);
  // The two clocks drift apart only by the realtime clock's adjustments:
  // far below a second between two reads a moment apart.
  EXPECT_GT(t.job.epoch_offset_ns, std::min(offset_before, offset_after) - 1'000'000'000);
  EXPECT_LT(t.job.epoch_offset_ns, std::max(offset_before, offset_after) + 1'000'000'000);
  EXPECT_LT(t.job.epoch_offset_uncertainty_ns, 1'000'000'000u);
  EXPECT_EQ(read_gdtrace_job(path).rank, 1) << "read without the events";
}

TEST(Recorder, AProcessNoLauncherStartedSaysItsHostButNoPlace) {
  const ScopedEnv env({{"RANK", "not a rank"}, {"WORLD_SIZE", "4"}}, kLauncherVariables);
  const std::string path = test::temp_path("identity-alone.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  rec::stop();
  const Trace t = read_gdtrace(path);
  EXPECT_FALSE(t.job.known());
  EXPECT_EQ(t.job.rank, -1);
  EXPECT_EQ(t.job.local_rank, -1);
  EXPECT_EQ(t.job.launcher, "");
  EXPECT_FALSE(t.job.host.empty());
  EXPECT_TRUE(t.job.epoch_offset_known);
  EXPECT_EQ(t.exit_status, -1) << "stop() is no exit";
}

TEST(Recorder, UnwritablePathFailsCleanly) {
  EXPECT_FALSE(rec::start("/nonexistent-dir/x/trace.gdtrace"));
  EXPECT_FALSE(rec::enabled());
}

// A file that opens but takes no data (a full disk): start fails, says why,
// and a later start works.
TEST(Recorder, AFileThatTakesNoDataFailsCleanly) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  testing::internal::CaptureStderr();
  EXPECT_FALSE(rec::start("/dev/full"));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("cannot write trace file /dev/full"), std::string::npos) << said;
  EXPECT_FALSE(rec::enabled());
  const std::string path = test::temp_path("after_full.gdtrace");
  ASSERT_TRUE(rec::start(path.c_str()));
  rec::stop();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gpudiag
