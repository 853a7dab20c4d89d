// The samples as a user meets them (samples/README.md), checked against what
// each sample's expected.json promises:
//  - gpulint on the buggy source reports exactly the expected findings (rule,
//    file, line) at warning or error, and on the fixed twin none;
//  - the buggy program, run under `gpudiag trace`, shows its symptom (exit
//    status, and the "symptom:" line the sample prints when it measured the
//    harm itself), and the trace's report gives every expected rule and no
//    other warning or error;
//  - the fixed program exits 0, prints no symptom, and its report has no
//    warning or error.
// gdrt samples run on emu, so their bugs really happen here. The CUDA and
// PyTorch flavours run where a GPU is (and, for PyTorch, python3 with a
// CUDA-enabled torch); elsewhere they skip with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "python_with.h"
#include "run_command.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using gpudiag::test::CommandResult;
using gpudiag::test::run_command;
using gpudiag::test::shell_quote;

struct Sample {
  std::string rule_name;  // the folder: samples/<rule-name>
  std::string flavour;    // gdrt, cuda or torch
  bool buggy = true;
  json spec;              // expected.json's entry for the flavour

  std::string variant() const { return buggy ? "buggy" : "fixed"; }
  fs::path dir() const { return fs::path(SAMPLES_SOURCE_DIR) / rule_name; }
  fs::path source() const {
    return dir() / (variant() + (flavour == "gdrt" ? ".cpp" : flavour == "cuda" ? ".cu" : ".py"));
  }
};

void PrintTo(const Sample& s, std::ostream* os) { *os << s.source().string(); }

std::vector<Sample> all_samples() {
  std::vector<Sample> samples;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(SAMPLES_SOURCE_DIR))
    if (fs::exists(entry.path() / "expected.json")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    std::ifstream in(dir / "expected.json");
    const json expected = json::parse(in);
    for (const auto& [flavour, spec] : expected.at("flavours").items())
      for (bool buggy : {true, false}) samples.push_back({dir.filename().string(), flavour, buggy, spec});
  }
  return samples;
}

std::string test_name(const ::testing::TestParamInfo<Sample>& info) {
  std::string name = info.param.rule_name + "_" + info.param.flavour + "_" + info.param.variant();
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

// (rule, file name, line) of each finding at warning or error.
using Located = std::tuple<std::string, std::string, int>;

std::set<Located> severe_static_findings(const json& report) {
  std::set<Located> found;
  for (const json& f : report.at("findings"))
    if (f.at("severity") != "note")
      found.emplace(f.at("rule").get<std::string>(), fs::path(f.at("location").at("file").get<std::string>()).filename().string(),
                    f.at("location").at("line").get<int>());
  return found;
}

class SampleSource : public ::testing::TestWithParam<Sample> {};

TEST_P(SampleSource, GpulintReportsExactlyTheExpectedFindings) {
  const Sample& s = GetParam();
  if (std::string(GPULINT_EXE).empty()) GTEST_SKIP() << "gpulint was not built (no clang/LLVM 19)";
  // gdrt sources are compiled as the build compiles them (-p); CUDA ones
  // with gpulint's own CUDA defaults, as a user without a build would.
  const std::string database = s.flavour == "gdrt" ? "-p " + shell_quote(GPUDIAG_BINARY_DIR) + " " : "";
  const CommandResult lint =
      run_command(shell_quote(GPULINT_EXE) + " --format=json " + database + shell_quote(s.source().string()) + " 2>/dev/null");
  ASSERT_TRUE(lint.status == 0 || lint.status == 1) << lint.out;
  const std::set<Located> found = severe_static_findings(json::parse(lint.out));
  std::set<Located> expected;
  if (s.buggy)
    for (const json& f : s.spec.at("static")) expected.emplace(f.at("rule").get<std::string>(), f.at("file").get<std::string>(), f.at("line").get<int>());
  for (const Located& e : expected)
    EXPECT_TRUE(found.count(e)) << "gpulint missed " << std::get<0>(e) << " at " << std::get<1>(e) << ":"
                                << std::get<2>(e) << "\n" << lint.out;
  for (const Located& f : found)
    EXPECT_TRUE(expected.count(f)) << "gpulint reported " << std::get<0>(f) << " at " << std::get<1>(f) << ":"
                                   << std::get<2>(f) << ", which " << s.source().filename().string()
                                   << " does not do\n" << lint.out;
}

// The samples of the flavours `keep` takes.
std::vector<Sample> samples_of(bool (*keep)(const std::string& flavour)) {
  std::vector<Sample> out;
  for (Sample& s : all_samples())
    if (keep(s.flavour)) out.push_back(std::move(s));
  return out;
}

bool is_torch(const std::string& flavour) { return flavour == "torch"; }
bool is_compiled(const std::string& flavour) { return !is_torch(flavour); }

INSTANTIATE_TEST_SUITE_P(Samples, SampleSource, ::testing::ValuesIn(samples_of(is_compiled)), test_name);

// Why this sample's program cannot run here, or "".
std::string why_not_runnable(const Sample& s) {
  if (s.flavour == "gdrt") return "";
  if (std::string why = gpudiag::test::why_no_gpu(); !why.empty()) return why;
  if (s.flavour == "cuda") {
    if (!fs::exists(fs::path(SAMPLES_BINARY_DIR) / s.rule_name / (s.variant() + "_cuda")))
      return "the CUDA samples were not built (GPUDIAG_WITH_CUDA=OFF)";
    return "";
  }
  if (run_command("python3 -c 'import torch; assert torch.cuda.is_available()'").status != 0)
    return "python3 on PATH has no PyTorch that can use the GPU";
  return "";
}

std::string program(const Sample& s) {
  const fs::path bin = fs::path(SAMPLES_BINARY_DIR) / s.rule_name;
  if (s.flavour == "gdrt") return shell_quote((bin / s.variant()).string());
  if (s.flavour == "cuda") return shell_quote((bin / (s.variant() + "_cuda")).string());
  return "python3 " + shell_quote(s.source().string());
}

// A healthy run's trace, damaged: cut at each tenth of its length, or with
// 8 bytes flipped in the middle. What is left may show less, never an error
// the run did not have, and the report blames no cause the file does not show.
void expect_no_error_from_damage(const std::string& trace) {
  const std::string bytes = gpudiag::test::read_file(trace);
  ASSERT_GT(bytes.size(), 64u);
  std::vector<std::pair<std::string, std::string>> damaged;  // what was done, the file
  for (int tenth = 1; tenth <= 9; ++tenth)
    damaged.emplace_back("cut at " + std::to_string(tenth * 10) + "%", bytes.substr(0, bytes.size() * tenth / 10));
  std::string flipped = bytes;
  for (std::size_t i = 0; i < 8; ++i) flipped[flipped.size() / 2 + i] = static_cast<char>(~flipped[flipped.size() / 2 + i]);
  damaged.emplace_back("8 bytes flipped in the middle", flipped);
  for (std::size_t i = 0; i < damaged.size(); ++i) {
    const std::string path = trace + ".damaged-" + std::to_string(i);
    std::ofstream(path, std::ios::binary) << damaged[i].second;
    const CommandResult report = run_command(shell_quote(GPUDIAG_EXE) + " report " + shell_quote(path) + " 2>&1");
    EXPECT_EQ(report.status, 0) << damaged[i].first << ": an error the healthy run did not have\n" << report.out;
    EXPECT_EQ(report.out.find("SIGKILL"), std::string::npos) << damaged[i].first << "\n" << report.out;
  }
}

class SampleRun : public ::testing::TestWithParam<Sample> {};

TEST_P(SampleRun, TracedRunShowsTheSymptomAndTheReportNamesIt) {
  const Sample& s = GetParam();
  if (std::string why = why_not_runnable(s); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = gpudiag::test::temp_path(s.rule_name + "-" + s.flavour + "-" + s.variant());
  fs::create_directories(dir);
  const std::string trace = (dir / "trace.gdtrace").string();
  std::string env = "NO_COLOR=1 GDRT_DEVICE=emu";
  if (s.spec.contains("env"))
    for (const auto& [name, value] : s.spec.at("env").items()) env += " " + name + "=" + shell_quote(value.get<std::string>());
  const CommandResult run = run_command("cd " + shell_quote(dir.string()) + " && env " + env + " " + shell_quote(GPUDIAG_EXE) +
                                  " trace -o " + shell_quote(trace) + " -- " + program(s));
  const json& symptom = s.spec.at("symptom");
  if (s.buggy) {
    EXPECT_EQ(run.status, symptom.value("exit", 0)) << run.out;
    if (symptom.contains("output")) {
      EXPECT_NE(run.out.find(symptom.at("output").get<std::string>()), std::string::npos)
          << "the buggy sample did not show its symptom (" << symptom.at("what").get<std::string>() << ")\n"
          << run.out;
    }
  } else {
    EXPECT_EQ(run.status, 0) << run.out;
    EXPECT_EQ(run.out.find("symptom:"), std::string::npos) << run.out;
  }
  ASSERT_TRUE(fs::exists(trace)) << "no trace was written\n" << run.out;

  const CommandResult report = run_command(shell_quote(GPUDIAG_EXE) + " report --fail-on none --json " + shell_quote(trace) + " 2>/dev/null");
  ASSERT_EQ(report.status, 0) << report.out;
  std::set<std::string> rules, severe;
  const json findings = json::parse(report.out).at("findings");
  for (const json& f : findings) {
    const std::string rule = f.at("rule");
    rules.insert(rule);
    if (f.at("severity") != "note") severe.insert(rule);
  }
  const std::set<std::string> expected =
      s.buggy ? s.spec.at("runtime").get<std::set<std::string>>() : std::set<std::string>{};
  for (const std::string& rule : expected) EXPECT_TRUE(rules.count(rule)) << "the report missed " << rule << "\n" << report.out;
  for (const std::string& rule : severe)
    EXPECT_TRUE(expected.count(rule)) << "the report gave " << rule << ", which the " << s.variant()
                                      << " sample does not do\n" << report.out;
  if (!s.buggy) expect_no_error_from_damage(trace);
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleRun, ::testing::ValuesIn(all_samples()), test_name);

// The PyTorch flavours run only on a GPU, so that a typo or a broken import
// of samples/common is not first met there: each loads (its imports, the
// shared model) and, with no GPU visible to PyTorch, stops with exit 3 and
// says why, as its docstring promises. Needs python3 with PyTorch (Debian's
// python3-torch).
class TorchSampleLoads : public ::testing::TestWithParam<Sample> {};

TEST_P(TorchSampleLoads, AndStopsWithExit3WhereNoGpuIsVisible) {
  const Sample& s = GetParam();
  const std::optional<std::string> python = gpudiag::test::python_with("torch");
  if (!python) GTEST_SKIP() << "no python3 with PyTorch (Debian's python3-torch)";
  const CommandResult run = run_command("CUDA_VISIBLE_DEVICES= " + *python + " " + shell_quote(s.source().string()));
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_NE(run.out.find("no CUDA device available to PyTorch"), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Samples, TorchSampleLoads, ::testing::ValuesIn(samples_of(is_torch)), test_name);

// The healthy trainer is the example of a good memory timeline: its traced
// run has no warning, and every output calls the host "host".
TEST(HealthyTrainer, TracedOnEmuHasNoWarningAndNoDeviceMinusOne) {
  const fs::path dir = gpudiag::test::temp_path("train_unet");
  fs::create_directories(dir);
  const std::string trace = (dir / "train_unet.gdtrace").string();
  const CommandResult run =
      run_command("cd " + shell_quote(dir.string()) + " && env NO_COLOR=1 GDRT_DEVICE=emu " + shell_quote(GPUDIAG_EXE) + " trace -o " +
            shell_quote(trace) + " -- " + shell_quote(std::string(SAMPLES_BINARY_DIR) + "/train_unet/train_unet") +
            " --epochs 1 --train 64 --val 16 --checkpoint ''");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find("device -1"), std::string::npos) << run.out;
  const CommandResult report = run_command(shell_quote(GPUDIAG_EXE) + " report --fail-on none --json " + shell_quote(trace) +
                                     " --html " + shell_quote(trace + ".html") + " --chrome " + shell_quote(trace + ".json"));
  ASSERT_EQ(report.status, 0) << report.out;
  const json findings = json::parse(report.out).at("findings");
  for (const json& f : findings) EXPECT_EQ(f.at("severity"), "note") << f.dump(2);
  for (const std::string& out : {trace + ".html", trace + ".json"})
    EXPECT_EQ(gpudiag::test::read_file(out).find("device -1"), std::string::npos) << out;
}

// The gdrt device-mismatch sample aborts at its first convolution, after
// moving the model and making one batch on the host: the samples the loader
// makes repeat (five ops each), but nothing of it is a training loop, and the
// report claims no iterations.
TEST(DeviceMismatchSample, AnAbortAtTheFirstConvolutionShowsNoIterations) {
  const fs::path dir = gpudiag::test::temp_path("device-mismatch-phases");
  fs::create_directories(dir);
  const std::string trace = (dir / "buggy.gdtrace").string();
  const CommandResult run =
      run_command("cd " + shell_quote(dir.string()) + " && env NO_COLOR=1 GDRT_DEVICE=emu " + shell_quote(GPUDIAG_EXE) +
                  " trace -o " + shell_quote(trace) + " -- " +
                  shell_quote(std::string(SAMPLES_BINARY_DIR) + "/device-mismatch/buggy"));
  ASSERT_TRUE(fs::exists(trace)) << run.out;
  const CommandResult report =
      run_command(shell_quote(GPUDIAG_EXE) + " report --fail-on none --json " + shell_quote(trace) + " 2>/dev/null");
  ASSERT_EQ(report.status, 0) << report.out;
  const json phases = json::parse(report.out).at("phases");
  EXPECT_EQ(phases.at("iterations"), 0) << phases.dump();
  EXPECT_EQ(phases.at("startup_ns"), 0) << phases.dump();
}

// samples/README.md is where users find the samples: each has its row.
TEST(SamplesReadme, HasARowForEverySample) {
  const std::string readme = gpudiag::test::read_file(std::string(SAMPLES_SOURCE_DIR) + "/README.md");
  ASSERT_FALSE(readme.empty()) << "samples/README.md is missing";
  std::set<std::string> names;
  for (const Sample& s : all_samples()) names.insert(s.rule_name);
  for (const std::string& name : names)
    EXPECT_NE(readme.find("| [" + name + "](" + name + "/)"), std::string::npos) << name << " has no row";
}

}  // namespace
