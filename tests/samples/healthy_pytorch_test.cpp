// samples/healthy-pytorch: the loops people really write in PyTorch. Each
// program runs (two steps on the CPU, where a PyTorch 2.1 or later is
// installed), and on a GPU all of them, traced and profiled, report no
// warning and no error (run_on_gpu.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "python_with.h"
#include "run_command.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using gpudiag::test::CommandResult;
using gpudiag::test::run_command;
using gpudiag::test::shell_quote;

const fs::path kFolder = fs::path(SAMPLES_SOURCE_DIR) / "healthy-pytorch";

std::vector<std::string> programs() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kFolder))
    if (entry.path().extension() == ".py" && entry.path().stem() != "healthy_loop")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A python3 whose PyTorch is 2.1 or later (the samples use torch.amp and
// torch.compile), or why there is none.
std::optional<std::string> modern_torch(std::string& why) {
  const std::optional<std::string> python = gpudiag::test::python_with("torch");
  if (!python) {
    why = "no python3 with PyTorch";
    return std::nullopt;
  }
  const CommandResult version = run_command(
      *python + " -c 'import sys, torch; v = tuple(int(x) for x in torch.__version__.split(\"+\")[0].split(\".\")[:2]); "
                "sys.exit(0 if v >= (2, 1) else 1)'");
  if (version.status != 0) {
    why = "the healthy samples are written for PyTorch 2.1 or later; " + *python + " has an older one";
    return std::nullopt;
  }
  return python;
}

class HealthyPytorchSample : public ::testing::TestWithParam<std::string> {};

TEST_P(HealthyPytorchSample, RunsTwoStepsOnTheCpu) {
  std::string why;
  const auto python = modern_torch(why);
  if (!python) GTEST_SKIP() << why;
  const CommandResult run =
      run_command("timeout 900 " + *python + " " + shell_quote((kFolder / (GetParam() + ".py")).string()) +
                  " --device cpu --steps 2 --epoch 2 2>&1");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("trained 2 steps"), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Programs, HealthyPytorchSample, ::testing::ValuesIn(programs()),
                         [](const auto& info) { return info.param; });

TEST(HealthyPytorchSamples, EveryIdiomOfTheReadmeHasItsProgram) {
  const std::string readme = gpudiag::test::read_file((kFolder / "README.md").string());
  for (const std::string& name : programs())
    EXPECT_NE(readme.find("`" + name + ".py`"), std::string::npos) << name << ".py is not in the README's table";
  EXPECT_EQ(programs().size(), 10u);
}

TEST(HealthyPytorchSamples, TracedAndProfiledOnAGpuReportNoWarning) {
  if (std::string why = gpudiag::test::why_no_gpu(); !why.empty()) GTEST_SKIP() << why;
  std::string why;
  const auto python = modern_torch(why);
  if (!python) GTEST_SKIP() << why;
  if (run_command(*python + " -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'").status != 0)
    GTEST_SKIP() << *python << " has no PyTorch that can use the GPU";
  const fs::path out = gpudiag::test::temp_path("healthy-pytorch");
  const CommandResult run = run_command("bash " + shell_quote((kFolder / "run_on_gpu.sh").string()) + " " +
                                        shell_quote(GPUDIAG_EXE) + " " + shell_quote(out.string()) + " " + *python +
                                        " 2>&1");
  EXPECT_EQ(run.status, 0) << run.out;
}

}  // namespace
