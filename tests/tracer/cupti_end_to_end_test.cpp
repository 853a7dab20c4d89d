// The CUPTI injection library traces a real CUDA program end to end. Needs a
// GPU and its driver; skips with the reason otherwise.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

// Why CUDA cannot run here, or "" when it can.
std::string why_no_gpu() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::string("no CUDA driver: ") + dlerror();
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  std::string why;
  int devices = 0;
  if (init == nullptr || count == nullptr) why = "libcuda.so.1 lacks cuInit";
  else if (int rc = init(0); rc != 0) why = "cuInit failed with CUresult " + std::to_string(rc);
  else if (count(&devices) != 0 || devices == 0) why = "no CUDA device";
  dlclose(lib);
  return why;
}

TEST(CuptiEndToEnd, TracesAllocCopyKernelSyncFree) {
  if (std::string(CUDA_TRACE_PROGRAM).empty()) GTEST_SKIP() << "nvcc was not found at configure time: no CUDA test program";
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << why;
  const std::string pattern = test::temp_path("cuda-%p.gdtrace");
  const int status = test::run({CUDA_TRACE_PROGRAM}, {"GPUDIAG_TRACE=" + pattern, "CUDA_INJECTION64_PATH=" GPUDIAG_CUPTI_LIBRARY});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  const auto dir = std::filesystem::path(pattern).parent_path();
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find("cuda-") != std::string::npos) file = e.path().string();
  ASSERT_FALSE(file.empty());
  const Trace t = load_trace(file);
  EXPECT_GE(t.kernels.size(), 1u);
  EXPECT_GE(t.memcpys.size(), 2u);
  EXPECT_GE(t.memsets.size(), 1u);
  EXPECT_GE(t.allocs.size(), 1u);
  EXPECT_GE(t.frees.size(), 1u);
  EXPECT_GE(t.syncs.size(), 1u);
  EXPECT_FALSE(t.api_calls.empty());
  bool scale = false;
  for (const auto& k : t.kernels) scale |= t.str(k.name).find("scale") != std::string_view::npos;
  EXPECT_TRUE(scale);
}

}  // namespace
}  // namespace gpudiag
