// `gpudiag doctor` as users run it, on this machine.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_gpudiag.h"

namespace {

using gpudiag::testing::run_gpudiag;

// Found as the loader finds it, wherever the driver is installed
// (/usr/local/nvidia/lib64 in GPU containers).
bool has_driver() {
  void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (libcuda != nullptr) dlclose(libcuda);
  return libcuda != nullptr;
}

TEST(DoctorCli, NoDriverHere) {
  if (has_driver()) GTEST_SKIP() << "an NVIDIA driver is installed on this machine";
  auto r = run_gpudiag("doctor");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(r.out.starts_with("No usable GPU: no NVIDIA driver")) << r.out;
  EXPECT_NE(r.out.find("libcuda.so.1"), std::string::npos);
  EXPECT_NE(r.out.find("GDRT_DEVICE=emu"), std::string::npos);
}

TEST(DoctorCli, JsonParses) {
  auto r = run_gpudiag("doctor --json", false);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(r.status, j["gpu_usable"].get<bool>() ? 0 : 1);
  EXPECT_TRUE(j["verdict"].is_string());
  if (!has_driver()) {
    EXPECT_EQ(j["driver"]["found"], false);
    EXPECT_EQ(j["fallback_device"], "emu");
  }
}

TEST(DoctorCli, HiddenDevicesAreReported) {
  auto r = run_gpudiag("doctor --json", false, "NO_COLOR=1 CUDA_VISIBLE_DEVICES=-1");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cuda_visible_devices"]["hides_all"], true);
  EXPECT_EQ(r.status, 1);
}

TEST(DoctorCli, UnknownFlagExitsTwo) {
  auto r = run_gpudiag("doctor --frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("frobnicate"), std::string::npos) << r.out;
}

}  // namespace
