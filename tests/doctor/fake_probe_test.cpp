// doctor on machines we do not have: fake drivers and libraries behind the
// Probe interface, and fake driver entry points behind DriverApi.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpudiag/doctor/probe.h"
#include "gpudiag/doctor/report.h"

namespace gpudiag::doctor {
namespace {

class FakeProbe final : public Probe {
 public:
  DriverInfo driver_info;
  LibraryInfo cudart_info, cudnn_info, cupti_info, injection_info;
  std::optional<std::string> visible;
  int built = 13000;

  FakeProbe() {
    cudart_info = {true, "/opt/cuda/lib64/libcudart.so.13", {}, {}, 13000, 0};
    cudnn_info = {true, "/opt/cuda/lib64/libcudnn.so.9", {}, {}, 91900, 13010};
    cupti_info = {true, "/opt/cuda/lib64/libcupti.so.13", {}, {}, 130001, 0};
  }
  DriverInfo driver() override { return driver_info; }
  LibraryInfo cuda_runtime() override { return cudart_info; }
  LibraryInfo cudnn() override { return cudnn_info; }
  LibraryInfo cupti() override { return cupti_info; }
  LibraryInfo injection_library() override { return injection_info; }
  std::optional<std::string> env(const std::string& name) override {
    return name == "CUDA_VISIBLE_DEVICES" ? visible : std::nullopt;
  }
  int built_runtime_version() override { return built; }
};

DriverInfo driver_with_devices(int count, int version = 13000) {
  DriverInfo d;
  d.loaded = true;
  d.library = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  d.version = version;
  d.init_result = 0;
  d.device_count = count;
  for (int i = 0; i < count; ++i) {
    d.devices.push_back({i, i == 0 ? "NVIDIA A100-SXM4-40GB" : "NVIDIA L4", i == 0 ? 8 : 8, i == 0 ? 0 : 9,
                         (i == 0 ? 40ull : 24ull) << 30, ""});
  }
  return d;
}

Report run(FakeProbe& probe) { return diagnose(gather(probe)); }

std::string text_of(const Report& r) {
  std::ostringstream out;
  render_text(out, r, false);
  return out.str();
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string problems_of(const Report& r) {
  std::string all;
  for (const auto& p : r.problems) all += p.title + " | " + p.detail + " | " + p.fix + "\n";
  return all;
}

TEST(Doctor, NoDriver) {
  FakeProbe probe;
  probe.driver_info.load_error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_TRUE(contains(r.verdict, "no NVIDIA driver")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "libcuda.so.1 not found"));
  ASSERT_FALSE(r.problems.empty());
  EXPECT_EQ(r.problems.front().severity, Problem::Severity::Error);
  EXPECT_TRUE(contains(r.problems.front().fix, "R580 or newer for CUDA 13")) << r.problems.front().fix;
  probe.built = 12080;
  probe.cudart_info.version = 12080;
  EXPECT_TRUE(contains(run(probe).problems.front().fix, "R525 or newer for CUDA 12"));
  const std::string text = text_of(r);
  EXPECT_EQ(first_line(text), r.verdict);
  EXPECT_TRUE(contains(text, "GDRT_DEVICE=emu")) << text;
  EXPECT_TRUE(contains(text, "cannot open shared object file"));
  EXPECT_TRUE(contains(text, "9.19.0, built for CUDA 13.1"));
  const auto j = to_json(r);
  EXPECT_EQ(j["gpu_usable"], false);
  EXPECT_EQ(j["driver"]["found"], false);
  EXPECT_EQ(j["fallback_device"], "emu");
}

TEST(Doctor, DriverWithZeroDevices) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(0);
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_TRUE(contains(r.verdict, "sees no device")) << r.verdict;
  EXPECT_TRUE(contains(text_of(r), "GDRT_DEVICE=emu"));
}

TEST(Doctor, TwoDevices) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(2);
  const Report r = run(probe);
  EXPECT_TRUE(r.gpu_usable) << problems_of(r);
  EXPECT_EQ(exit_code(r), 0);
  EXPECT_TRUE(r.problems.empty()) << problems_of(r);
  EXPECT_TRUE(r.verdict.starts_with("GPU usable: 2 devices: NVIDIA A100-SXM4-40GB (compute capability 8.0)"))
      << r.verdict;
  const std::string text = text_of(r);
  EXPECT_TRUE(contains(text, "cuda:0  NVIDIA A100-SXM4-40GB  compute capability 8.0  40.0 GiB")) << text;
  EXPECT_TRUE(contains(text, "cuda:1  NVIDIA L4  compute capability 8.9  24.0 GiB")) << text;
  EXPECT_FALSE(contains(text, "GDRT_DEVICE=emu"));
  const auto j = to_json(r);
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][1]["compute_capability"], "8.9");
  EXPECT_EQ(j["devices"][0]["total_memory_bytes"], 40ull << 30);
  EXPECT_EQ(j["driver"]["cuda_version_string"], "13.0");
}

TEST(Doctor, DriverOlderThanTheRuntime) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1, 12040);
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_TRUE(contains(r.verdict, "CUDA 12.4")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "R580")) << r.verdict;
  const std::string all = problems_of(r);
  EXPECT_TRUE(contains(all, "CUDA 13.0, newer than the driver supports (CUDA 12.4)")) << all;
  EXPECT_TRUE(contains(all, "cudaErrorInsufficientDriver (35)"));
  EXPECT_TRUE(contains(all, "R580 or newer"));
}

TEST(Doctor, RuntimeNewerMinorIsAWarningOnly) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1, 13000);
  probe.cudart_info.version = 13010;
  const Report r = run(probe);
  EXPECT_TRUE(r.gpu_usable);
  ASSERT_EQ(r.problems.size(), 1u) << problems_of(r);
  EXPECT_EQ(r.problems[0].severity, Problem::Severity::Warning);
  EXPECT_TRUE(contains(r.problems[0].detail, "minor version compatibility"));
}

TEST(Doctor, CudnnBuiltForAnotherCudaMajor) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1);
  probe.cudnn_info.cudart_version = 12080;
  const Report r = run(probe);
  EXPECT_TRUE(r.gpu_usable);  // the GPU works; cuDNN calls will not
  ASSERT_EQ(r.problems.size(), 1u) << problems_of(r);
  EXPECT_EQ(r.problems[0].severity, Problem::Severity::Error);
  EXPECT_TRUE(contains(r.problems[0].title, "built for CUDA 12.x but the CUDA runtime is 13.0")) << r.problems[0].title;
  EXPECT_TRUE(contains(r.problems[0].fix, "libcudnn9-cuda-13"));
}

TEST(Doctor, GpuOlderThanTheRuntimeSupports) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1);
  probe.driver_info.devices[0] = {0, "NVIDIA GeForce GTX 1080", 6, 1, 8ull << 30, ""};
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_TRUE(contains(r.verdict, "compute capability 6.1) is older than CUDA 13.x supports")) << r.verdict;
  EXPECT_TRUE(contains(problems_of(r), "cudaErrorNoKernelImageForDevice (209)")) << problems_of(r);
  EXPECT_TRUE(contains(problems_of(r), "CUDA 12.x"));
}

TEST(Doctor, OneOldGpuAmongNewOnesLeavesTheOthersUsable) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(2);
  probe.driver_info.devices[1] = {1, "Tesla V100-SXM2-16GB", 7, 0, 16ull << 30, ""};
  const Report r = run(probe);
  EXPECT_TRUE(r.gpu_usable);
  ASSERT_EQ(r.problems.size(), 1u) << problems_of(r);
  EXPECT_TRUE(contains(r.problems[0].title, "cuda:1 (Tesla V100-SXM2-16GB"));
  EXPECT_TRUE(contains(r.problems[0].fix, "CUDA_VISIBLE_DEVICES"));
  // The same GPU is fine for a CUDA 12 build.
  probe.built = 12080;
  probe.cudart_info.version = 12080;
  probe.cudnn_info.cudart_version = 12080;
  EXPECT_TRUE(run(probe).problems.empty()) << problems_of(run(probe));
}

TEST(Doctor, MissingLibrariesAreWarningsWithFixes) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1);
  probe.cudnn_info = {};
  probe.cudnn_info.tried = {"libcudnn.so.9"};
  probe.cupti_info = {};
  probe.cudart_info = {};
  const Report r = run(probe);
  EXPECT_TRUE(r.gpu_usable);
  const std::string all = problems_of(r);
  EXPECT_TRUE(contains(all, "cuDNN not found")) << all;
  EXPECT_TRUE(contains(all, "CUPTI not found"));
  EXPECT_TRUE(contains(all, "libcudart.so.13 (CUDA 13.0) is not loadable"));
  for (const auto& p : r.problems) EXPECT_EQ(p.severity, Problem::Severity::Warning) << p.title;
  EXPECT_EQ(to_json(r)["cudnn"]["found"], false);
}

TEST(Doctor, AnInjectionLibraryThatDoesNotLoadIsAnErrorWithTheLoadersMessage) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(1);
  probe.injection_info.tried = {"/opt/gpudiag/lib/libgpudiag_cupti.so"};
  probe.injection_info.load_error =
      "/opt/gpudiag/lib/libgpudiag_record.so.0: cannot allocate memory in static TLS block";
  const Report r = run(probe);
  const std::string all = problems_of(r);
  EXPECT_TRUE(contains(all, "gpudiag's CUPTI injection library does not load: /opt/gpudiag/lib/libgpudiag_record.so.0: "
                            "cannot allocate memory in static TLS block"))
      << all;
  EXPECT_TRUE(contains(all, "gpudiag trace would record no CUDA activity")) << all;
  EXPECT_EQ(to_json(r)["injection_library"]["found"], false);

  probe.injection_info = {true, "/opt/gpudiag/lib/libgpudiag_cupti.so", {"/opt/gpudiag/lib/libgpudiag_cupti.so"}, {}, 0, 0};
  EXPECT_FALSE(contains(problems_of(run(probe)), "injection library")) << "it loads: nothing to say";
  probe.injection_info = {};  // built without CUDA: not checked, not a problem
  EXPECT_FALSE(contains(problems_of(run(probe)), "injection library"));
}

TEST(Doctor, CudaVisibleDevicesHidesEverything) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(0);
  probe.driver_info.init_result = 100;  // what cuInit returns when every GPU is hidden
  probe.visible = "-1";
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_TRUE(contains(r.verdict, "CUDA_VISIBLE_DEVICES=-1 hides every GPU")) << r.verdict;
  EXPECT_TRUE(contains(r.verdict, "CUDA_ERROR_NO_DEVICE"));
  ASSERT_FALSE(r.problems.empty());
  EXPECT_TRUE(contains(r.problems[0].fix, "unset CUDA_VISIBLE_DEVICES")) << r.problems[0].fix;
  EXPECT_EQ(to_json(r)["cuda_visible_devices"]["hides_all"], true);
}

TEST(Doctor, InitFailureIsExplained) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(0);
  probe.driver_info.init_result = 34;
  probe.driver_info.library = "/usr/local/cuda/lib64/stubs/libcuda.so.1";
  const Report r = run(probe);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_TRUE(contains(r.verdict, "CUDA_ERROR_STUB_LIBRARY (34)")) << r.verdict;
  EXPECT_TRUE(contains(r.problems[0].fix, "stubs")) << r.problems[0].fix;
  EXPECT_TRUE(contains(r.problems[0].detail, "stub libcuda.so"));
}

TEST(Doctor, JsonRoundTripsThroughAParser) {
  FakeProbe probe;
  probe.driver_info = driver_with_devices(2);
  const auto parsed = nlohmann::json::parse(to_json(run(probe)).dump());
  for (const char* key : {"gpu_usable", "verdict", "driver", "devices", "cuda_runtime", "cudnn", "cupti",
                          "cuda_visible_devices", "problems", "notes"}) {
    EXPECT_TRUE(parsed.contains(key)) << key;
  }
}

// DriverApi fakes: the calls doctor makes, answered as a driver would.
int fake_version(int* v) { *v = 13000; return 0; }
int fake_init_ok(unsigned) { return 0; }
int fake_init_no_device(unsigned) { return 100; }
int fake_count_two(int* n) { *n = 2; return 0; }
int fake_get(int* device, int ordinal) { *device = ordinal; return 0; }
int fake_name(char* name, int length, int device) {
  std::snprintf(name, static_cast<std::size_t>(length), "%s", device == 0 ? "NVIDIA H100 PCIe" : "NVIDIA T4");
  return 0;
}
int fake_attribute(int* value, int attribute, int device) {
  if (attribute == kAttributeComputeCapabilityMajor) *value = device == 0 ? 9 : 7;
  else if (attribute == kAttributeComputeCapabilityMinor) *value = device == 0 ? 0 : 5;
  else return 1;
  return 0;
}
int fake_memory(std::size_t* bytes, int device) {
  *bytes = (device == 0 ? 80ull : 16ull) << 30;
  return 0;
}

TEST(QueryDriver, ReadsEveryDevice) {
  DriverApi api{fake_version, fake_init_ok, fake_count_two, fake_get, fake_name, fake_attribute, fake_memory};
  const DriverInfo info = query_driver(api);
  EXPECT_EQ(info.version, 13000);
  ASSERT_TRUE(info.init_result.has_value());
  EXPECT_EQ(*info.init_result, 0);
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_EQ(info.devices[0].name, "NVIDIA H100 PCIe");
  EXPECT_EQ(info.devices[0].cc_major, 9);
  EXPECT_EQ(info.devices[1].cc_minor, 5);
  EXPECT_EQ(info.devices[1].total_memory, 16ull << 30);
  EXPECT_TRUE(info.devices[1].error.empty());
}

TEST(QueryDriver, StopsWhenCuInitFails) {
  DriverApi api{fake_version, fake_init_no_device, fake_count_two, fake_get, fake_name, fake_attribute, fake_memory};
  DriverInfo info = query_driver(api);
  EXPECT_EQ(info.init_result, 100);
  EXPECT_TRUE(info.devices.empty());
  info.loaded = true;
  Facts facts;
  facts.driver = info;
  const Report r = diagnose(facts);
  EXPECT_FALSE(r.gpu_usable);
  EXPECT_TRUE(contains(r.verdict, "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")) << r.verdict;
}

TEST(QueryDriver, MissingEntryPointsAreNotCalled) {
  DriverApi api;
  api.get_version = fake_version;
  const DriverInfo info = query_driver(api);
  EXPECT_EQ(info.version, 13000);
  EXPECT_FALSE(info.init_result.has_value());
}

}  // namespace
}  // namespace gpudiag::doctor
