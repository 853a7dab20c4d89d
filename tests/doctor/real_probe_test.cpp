// The real probe on this machine. Our CI machines have no driver: doctor must
// say so. Where a driver exists the verdict depends on the machine.
#include <gtest/gtest.h>

#include "gpudiag/doctor/probe.h"
#include "gpudiag/doctor/report.h"

namespace gpudiag::doctor {
namespace {

TEST(RealProbe, SaysPlainlyThatThereIsNoDriver) {
  auto probe = system_probe();
  const Facts facts = gather(*probe);
  if (facts.driver.loaded) GTEST_SKIP() << "an NVIDIA driver is installed (" << facts.driver.library << ")";
  const Report r = diagnose(facts);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_NE(r.verdict.find("no NVIDIA driver"), std::string::npos) << r.verdict;
  EXPECT_FALSE(facts.driver.load_error.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("GDRT_DEVICE=emu"), std::string::npos);
}

TEST(RealProbe, LibrariesReportAVersionWhenFound) {
  auto probe = system_probe();
  for (const LibraryInfo& lib : {probe->cuda_runtime(), probe->cudnn(), probe->cupti()}) {
    if (lib.loaded) {
      EXPECT_GT(lib.version, 0) << lib.library;
      EXPECT_FALSE(lib.library.empty());
    } else {
      EXPECT_FALSE(lib.tried.empty());
    }
  }
}

}  // namespace
}  // namespace gpudiag::doctor
