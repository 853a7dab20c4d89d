// One folder for the files a test process writes. It is removed when the
// process's tests have all passed, and kept, with its path printed, when one
// failed, so what the failing test wrote can be read.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace gpudiag::test {

// Named by the pid of the test process itself, taken before any test forks.
inline const std::filesystem::path kScratchDir =
    std::filesystem::temp_directory_path() / ("gpudiag-test-" + std::to_string(::getpid()));

class ScratchDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    if (!std::filesystem::exists(kScratchDir, ec)) return;
    if (::testing::UnitTest::GetInstance()->Passed()) std::filesystem::remove_all(kScratchDir, ec);
    else std::fprintf(stderr, "the tests' files are kept in %s\n", kScratchDir.c_str());
  }
};

inline ::testing::Environment* const kScratchDirCleanup =
    ::testing::AddGlobalTestEnvironment(new ScratchDirCleanup);

// kScratchDir/`name`, an empty folder.
inline std::string scratch_dir(const std::string& name) {
  const std::filesystem::path dir = kScratchDir / name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace gpudiag::test
