// CUDA_VISIBLE_DEVICES as CUDA reads it, and version numbers as CUDA encodes them.
#include <gtest/gtest.h>

#include "gpudiag/doctor/report.h"

namespace gpudiag::doctor {
namespace {

using Strings = std::vector<std::string>;

TEST(VisibleDevices, UnsetShowsEverything) {
  auto v = parse_visible_devices(std::nullopt);
  EXPECT_FALSE(v.set);
  EXPECT_FALSE(v.hides_all);
  EXPECT_NE(v.description.find("not set"), std::string::npos);
}

TEST(VisibleDevices, EmptyAndMinusOneHideEverything) {
  auto empty = parse_visible_devices(std::string());
  EXPECT_TRUE(empty.hides_all);
  EXPECT_NE(empty.description.find("empty string"), std::string::npos);
  auto minus = parse_visible_devices(std::string("-1"));
  EXPECT_TRUE(minus.hides_all);
  EXPECT_NE(minus.description.find("hides every GPU"), std::string::npos);
}

TEST(VisibleDevices, ListRenumbers) {
  auto v = parse_visible_devices(std::string("2,0"));
  EXPECT_FALSE(v.hides_all);
  EXPECT_EQ(v.selected, (Strings{"2", "0"}));
  EXPECT_NE(v.description.find("2 as cuda:0, 0 as cuda:1"), std::string::npos) << v.description;
}

TEST(VisibleDevices, AnInvalidEntryEndsTheList) {
  auto v = parse_visible_devices(std::string("0,-1,1"));
  EXPECT_EQ(v.selected, (Strings{"0"}));
  EXPECT_EQ(v.ignored, (Strings{"-1", "1"}));
  EXPECT_NE(v.description.find("'-1' is not a valid entry"), std::string::npos) << v.description;
}

TEST(VisibleDevices, UuidForm) {
  auto v = parse_visible_devices(std::string("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"));
  EXPECT_TRUE(v.by_uuid);
  EXPECT_EQ(v.selected.size(), 1u);
  EXPECT_NE(v.description.find("UUID"), std::string::npos);
  EXPECT_TRUE(parse_visible_devices(std::string("MIG-abc")).by_uuid);
}

TEST(Versions, CudaEncoding) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
  EXPECT_EQ(cuda_version_string(0), "unknown");
  EXPECT_EQ(cuda_major(12090), 12);
}

TEST(Versions, CudnnEncodings) {
  EXPECT_EQ(cudnn_version_string(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_string(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_string(8907), "8.9.7");
  EXPECT_EQ(cudnn_version_string(0), "unknown");
}

TEST(Versions, MinimumDriverBranch) {
  EXPECT_EQ(minimum_driver_branch(13), "580");
  EXPECT_EQ(minimum_driver_branch(12), "525");
  EXPECT_EQ(minimum_driver_branch(7), "");
}

TEST(Versions, MinimumComputeCapability) {
  EXPECT_EQ(minimum_compute_capability(13), 75);
  EXPECT_EQ(minimum_compute_capability(12), 50);
  EXPECT_EQ(minimum_compute_capability(9), 0);
}

}  // namespace
}  // namespace gpudiag::doctor
