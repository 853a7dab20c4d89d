// What `gpudiag report` takes as a job: a folder's traces (not the files
// beside them), a glob, files; and a clear error for anything else.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpudiag/job/analyse_ranks.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;

class JobInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpudiag-job-inputs-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string touch(const std::string& name) {
    std::ofstream(dir_ / name) << "x";
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(JobInputs, AFolderGivesItsTracesNotTheFilesBesideThem) {
  const std::string r0 = touch("rank0.gdtrace"), r1 = touch("rank1.pt.trace.json.gz"), r2 = touch("rank2.sqlite");
  touch("rank0.gdtrace.torch-memory.json");
  touch("rank0.gdtrace.torch-oom.pickle");
  touch("rank0.gdtrace.3");  // a bounded trace's segment
  touch("job.html");
  EXPECT_EQ(expand_trace_inputs({dir_.string()}), (std::vector<std::string>{r0, r1, r2}));
}

TEST_F(JobInputs, AGlobGivesItsMatchesAndFilesAreTakenOnce) {
  const std::string a = touch("rank0.json"), b = touch("rank1.json");
  touch("other.gdtrace");
  EXPECT_EQ(expand_trace_inputs({(dir_ / "rank*.json").string(), a}), (std::vector<std::string>{a, b}));
}

TEST_F(JobInputs, NothingToReadIsAnErrorThatSaysWhat) {
  const auto message = [](const std::vector<std::string>& inputs) {
    try {
      expand_trace_inputs(inputs);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({dir_.string()}).find("holds no trace"), std::string::npos);
  EXPECT_NE(message({(dir_ / "missing.gdtrace").string()}).find("no such file or folder"), std::string::npos);
  EXPECT_NE(message({(dir_ / "*.gdtrace").string()}).find("no file matches"), std::string::npos);
}

}  // namespace
}  // namespace gpudiag
