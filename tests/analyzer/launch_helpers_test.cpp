// GD006 for launch helpers whose callers are in other files: a run over
// several files settles them once every file is analysed.
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

// Launch helpers, each called from main.cu in its own way.
constexpr const char* kKernels = R"(#include "helpers.cuh"
__global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }
template <class T> __global__ void scale(T* x) { x[threadIdx.x] *= 2; }
void launch_checked(float* d) { fill<<<1, 256>>>(d); }
static void launch_layer(float* d) { fill<<<1, 256>>>(d); }
void run_step(float* d) { launch_layer(d); }
template <class T> void launch_scale(T* d) { scale<<<1, 256>>>(d); }
template void launch_scale<float>(float*);
void launch_unchecked(float* d) { fill<<<1, 256>>>(d); }
void launch_synchronised(float* d) { fill<<<1, 256>>>(d); }
void launch_uncalled(float* d) { fill<<<1, 256>>>(d); }
void launch_uncalled_quiet(float* d) { fill<<<1, 256>>>(d); }  // NOLINT(GD006)
void launch_passed(float* d) { fill<<<1, 256>>>(d); }
void launch_frame(float* d) { fill<<<1, 256>>>(d); }
void launch_restricted(float* __restrict__ d, const int n) { fill<<<1, 256>>>(d); }
struct FillLayer : Layer {
  void forward(float* d) override;
};
void FillLayer::forward(float* d) { fill<<<1, 256>>>(d); }
void launch_tested(float* d) { fill<<<1, 256>>>(d); }
void self_test(float* d) { launch_tested(d); if (cudaGetLastError() != cudaSuccess) return; }
)";

// A launch helper in a header: kernels.cu includes it and calls nothing,
// main.cu calls it and checks.
constexpr const char* kHeader = R"(#include <cuda_runtime.h>
__global__ void zero(float* x) { x[threadIdx.x] = 0.0f; }
inline void launch_zero(float* d) { zero<<<1, 256>>>(d); }
struct Layer {
  virtual void forward(float* d) = 0;
};
)";

constexpr const char* kMain = R"(#include "helpers.cuh"
#include <cstdlib>
void launch_checked(float* d);
void run_step(float* d);
template <class T> void launch_scale(T* d);
void launch_unchecked(float* d);
void launch_synchronised(float* d);
void launch_passed(float* d);
void launch_frame(float* d);
void launch_restricted(float* d, int n);
void launch_tested(float* d);
void register_frame_callback(void (*callback)());
static void on_frame() { launch_frame(nullptr); }
static void check() { if (cudaGetLastError() != cudaSuccess) std::abort(); }
void run_layer(Layer& layer, float* d) {
  layer.forward(d);
  check();
}
static void bench(void (*launch)(float*), float* d) { launch(d); }
int main() {
  float* d = nullptr;
  if (cudaMalloc(&d, 1024) != cudaSuccess) return 1;
  launch_checked(d);
  check();
  launch_zero(d);
  check();
  run_step(d);
  check();
  launch_scale(d);
  check();
  launch_restricted(d, 256);
  check();
  bench(launch_passed, d);
  register_frame_callback(on_frame);
  launch_synchronised(d);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  launch_unchecked(d);
  launch_tested(d);
  return 0;
}
)";

// A GD006 launch warning on `line` of kernels.cu, in a --format=json report,
// whose message goes on with `what`.
bool reports(const LintRun& run, int line, const std::string& what) {
  const std::regex message("the launch of kernel '[a-z]+' is " + what + ".*");
  const auto report = nlohmann::json::parse(run.out);  // kept alive: the loop reads into it
  for (const auto& finding : report.at("findings")) {
    const std::string file = finding.at("location").at("file").get<std::string>();
    if (finding.at("rule") == "GD006" && finding.at("severity") == "warning" &&
        file.size() >= 11 && file.compare(file.size() - 11, 11, "/kernels.cu") == 0 &&
        finding.at("location").at("line") == line &&
        std::regex_match(finding.at("message").get<std::string>(), message))
      return true;
  }
  return false;
}

TEST(LaunchHelpers, CallersInAnotherFileSettleTheirLaunches) {
  const std::string dir = temp_dir("launch-helpers");
  write_file(dir + "/kernels.cu", kKernels);
  write_file(dir + "/helpers.cuh", kHeader);
  write_file(dir + "/main.cu", kMain);
  write_file(dir + "/.gpulint.yaml", "HeaderFilterRegex: '.*'\n");
  for (const std::string jobs : {"1", "2"}) {
    const LintRun run = run_gpulint({"--format=json", "-j", jobs, dir});
    EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
    EXPECT_TRUE(reports(run, 9, "never checked")) << run.out;
    EXPECT_TRUE(reports(run, 10, "checked only by a later synchronisation")) << run.out;
    EXPECT_TRUE(reports(run, 11, "never checked")) << run.out;
    // Its address is taken in another file, not its own: no call of it is
    // in sight, and no harness of its file excuses it.
    EXPECT_TRUE(reports(run, 13, "never checked")) << run.out;
    // Called only from a callback handed to a library, which reads no CUDA
    // error.
    EXPECT_TRUE(reports(run, 14, "never checked")) << run.out;
    // Checked where its own file calls it, but not where main.cu does.
    EXPECT_TRUE(reports(run, 20, "never checked")) << run.out;
    // Checked after the call (4), two calls up (5, through run_step), in
    // another unit's template instantiation (7), suppressed (12), declared
    // there without the definition's const and __restrict__ (15), an
    // override called through its base class there (19), in a header
    // (launch_zero): nothing else.
    EXPECT_EQ(count_rule(run.out, "GD006"), 6u) << run.out;
  }
}

TEST(LaunchHelpers, AloneAHelperFileHasItsLaunchesUnchecked) {
  const std::string dir = temp_dir("launch-helpers-alone");
  write_file(dir + "/kernels.cu", kKernels);
  write_file(dir + "/helpers.cuh", kHeader);
  const LintRun run = run_gpulint({"--format=json", dir + "/kernels.cu"});
  EXPECT_EQ(run.exit_code, 1);
  for (int line : {4, 5, 9, 10, 11, 13, 14, 15, 19})
    EXPECT_TRUE(reports(run, line, "never checked")) << line << run.out;
  // launch_tested (20) is checked by its one caller in sight.
  EXPECT_EQ(count_rule(run.out, "GD006"), 9u + 1u) << run.out;  // + the template's launch
}

// An inline helper in a header is judged in each file that includes it, by
// the calls in every file: both give its launch the same message, once.
TEST(LaunchHelpers, AHeaderHelperGetsOneMessageFromAllItsCallers) {
  const std::string dir = temp_dir("launch-helpers-header");
  write_file(dir + "/helper.cuh", "#include <cuda_runtime.h>\n"
                                  "__global__ void zero(float* x) { x[threadIdx.x] = 0.0f; }\n"
                                  "inline void launch_zero(float* d) { zero<<<1, 256>>>(d); }\n");
  write_file(dir + "/test.cu", "#include \"helper.cuh\"\n"
                               "int test_zero(float* d) {\n"
                               "  launch_zero(d);\n"
                               "  return cudaDeviceSynchronize() != cudaSuccess;\n"
                               "}\n");
  write_file(dir + "/train.cu", "#include \"helper.cuh\"\nvoid train(float* d) { launch_zero(d); }\n");
  write_file(dir + "/.gpulint.yaml", "HeaderFilterRegex: '.*'\n");
  const LintRun run = run_gpulint({"--format=json", dir + "/test.cu", dir + "/train.cu"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto findings = nlohmann::json::parse(run.out).at("findings");
  ASSERT_EQ(findings.size(), 1u) << run.out;
  EXPECT_EQ(findings[0].at("location").at("line"), 3) << run.out;
  EXPECT_NE(findings[0].at("message").get<std::string>().find("is never checked"), std::string::npos) << run.out;
}

// Settled findings keep their place after the error that the file did not
// parse cleanly, which comes first.
TEST(LaunchHelpers, SettledFindingsComeAfterTheParseError) {
  const std::string dir = temp_dir("launch-helpers-broken");
  write_file(dir + "/kernels.cu", std::string(kKernels) + "int broken = not_declared;\n");
  write_file(dir + "/helpers.cuh", kHeader);
  const LintRun run = run_gpulint({"--format=json", dir + "/kernels.cu"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto findings = nlohmann::json::parse(run.out).at("findings");
  ASSERT_EQ(findings.size(), 1u + 9u + 1u) << run.out;
  EXPECT_EQ(findings[0].at("rule"), "clang-diagnostic-error") << run.out;
  for (size_t i = 1; i < findings.size(); ++i) EXPECT_EQ(findings[i].at("rule"), "GD006") << run.out;
}

}  // namespace
}  // namespace gpudiag::lint::test
