// GD007 for buffers handed to helpers defined in another file: each file
// says which parameters of its functions are only used, and a run over both
// reports the caller's buffer when every helper it went to only uses it.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

constexpr const char* kHelpers = R"(#include <cuda_runtime.h>
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
void forward(const float* x, float* y, int n) { saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n); }
void upload(float* device, const float* host, int n) {
  cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice);
}
void release(float* p) { cudaFree(p); }
static float* g_cache = nullptr;
void keep(float* p) { g_cache = p; }
)";

constexpr const char* kTrain = R"(#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CHECK_CUDA(call)                                      \
  do {                                                        \
    cudaError_t status_ = (call);                             \
    if (status_ != cudaSuccess) {                             \
      fprintf(stderr, "%s\n", cudaGetErrorString(status_));   \
      exit(1);                                                \
    }                                                         \
  } while (0)
void forward(const float* x, float* y, int n);
void upload(float* device, const float* host, int n);
void release(float* p);
void keep(float* p);
void defined_nowhere(float* p);
void fit(const float* host, int n) {
  float* x = nullptr;
  float* y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  upload(x, host, n);
  forward(x, y, n);
  // cudaFree(x);
  // cudaFree(y);
}
void fit_released(const float* host, int n) {
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  upload(x, host, n);
  release(x);
}
void fit_kept(int n) {
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  keep(x);
}
void fit_handed_to_a_library(int n) {
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  defined_nowhere(x);
}
)";

// The GD007 findings of a --format=json report, as "file:line".
std::vector<std::string> leaks(const LintRun& run) {
  std::vector<std::string> out;
  const auto report = nlohmann::json::parse(run.out);
  for (const auto& finding : report.at("findings")) {
    if (finding.at("rule") != "GD007") continue;
    const std::string file = finding.at("location").at("file").get<std::string>();
    out.push_back(file.substr(file.rfind('/') + 1) + ":" + std::to_string(finding.at("location").at("line").get<int>()));
  }
  return out;
}

TEST(CrossUnitLeaks, ABufferHandedOnlyToAnotherFilesUsersIsTheCallersToFree) {
  const std::string dir = temp_dir("cross-unit-leaks");
  write_file(dir + "/helpers.cu", kHelpers);
  write_file(dir + "/train.cu", kTrain);
  for (const std::string jobs : {"1", "2"}) {
    const LintRun run = run_gpulint({"--format=json", "--checks=-*,GD007", "-j", jobs, dir});
    EXPECT_EQ(leaks(run), (std::vector<std::string>{"train.cu:20", "train.cu:21"})) << run.out << run.err;
    const auto report = nlohmann::json::parse(run.out);
    const auto& first = report.at("findings").at(0);
    EXPECT_NE(first.at("message").get<std::string>().find("'x' allocated by cudaMalloc is not freed"),
              std::string::npos)
        << run.out;
    bool names_helper = false;
    for (const auto& note : first.at("notes"))
      names_helper |= note.at("message") == "handed to 'forward', defined in another file, which only uses it";
    EXPECT_TRUE(names_helper) << run.out;
  }
}

// Without the helpers' file, what they do is not known: no claim.
TEST(CrossUnitLeaks, HelpersDefinedInNoFileOfTheRunKeepWhatTheyAreHanded) {
  const std::string dir = temp_dir("cross-unit-leaks-alone");
  write_file(dir + "/train.cu", kTrain);
  const LintRun run = run_gpulint({"--format=json", "--checks=-*,GD007", dir});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(leaks(run).empty()) << run.out;
}

}  // namespace
}  // namespace gpudiag::lint::test
