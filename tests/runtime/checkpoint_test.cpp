// Safetensors checkpoints: round trips, interop with python, corrupt files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_support.h"

namespace gdrt {
namespace {

namespace fs = std::filesystem;

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gdrt_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(Checkpoint, RoundTripsEveryDtype) {
  TensorMap m{{"f32", arange(0, 6).reshape({2, 3})},
              {"f64", full({2}, 0.1, TensorOptions{}.with_dtype(DType::f64))},
              {"f16", from_vector<float>({1.5f, -2.0f}, {2}).to(DType::f16)},
              {"i32", from_vector<std::int32_t>({-7, 9}, {2})},
              {"i64", from_vector<std::int64_t>({1ll << 40}, {1})},
              {"u8", from_vector<std::uint8_t>({255}, {1})},
              {"bool", from_vector<bool>({true, false, true}, {3})},
              {"scalar", full({}, 3.0)},
              {"view", arange(0, 12).reshape({3, 4}).transpose(0, 1)}};
  save_safetensors(path("a.safetensors"), m, {{"note", "hi"}});
  TensorMap back = load_safetensors(path("a.safetensors"));
  ASSERT_EQ(back.size(), m.size());
  for (const auto& [k, t] : m) {
    EXPECT_EQ(back[k].dtype(), t.dtype()) << k;
    EXPECT_EQ(back[k].shape(), t.shape()) << k;
    if (t.dtype() != DType::boolean) {
      EXPECT_TRUE(test::all_close(back[k].to(DType::f64), t.to(DType::f64), 0)) << k;
    }
  }
  EXPECT_EQ(back["bool"].to(DType::u8).to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(safetensors_metadata(path("a.safetensors")).at("note"), "hi");
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "temporary file left behind";
}

TEST_F(Checkpoint, SavesFromAndLoadsOntoAnotherDevice) {
  Tensor d = arange(0, 4).to(test::emu_device());
  save_safetensors(path("d.safetensors"), {{"x", d}});
  TensorMap back = load_safetensors(path("d.safetensors"), test::emu_device());
  EXPECT_EQ(back["x"].device(), test::emu_device());
  EXPECT_EQ(back["x"].to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
}

TEST_F(Checkpoint, ReadsAFileWrittenByPython) {
  // golden/ops.safetensors was written by make_golden.py with struct + json.
  auto m = load_safetensors(std::string(GDRT_GOLDEN_DIR) + "/ops.safetensors");
  EXPECT_EQ(m.at("cross_entropy.target").dtype(), DType::i64);
  EXPECT_EQ(m.at("conv_s2p1.in.1").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(safetensors_metadata(std::string(GDRT_GOLDEN_DIR) + "/ops.safetensors").at("producer"), "make_golden.py");
}

TEST_F(Checkpoint, PythonReadsOurFile) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with torch is not installed";
  save_safetensors(path("ours.safetensors"),
                   {{"w", arange(0, 6).reshape({2, 3})}, {"n", from_vector<std::int64_t>({5}, {1})}});
  const std::string script =
      "import json,struct,sys,torch\n"
      "b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); d=b[8+n:]\n"
      "e=h['w']; w=torch.frombuffer(bytearray(d[e['data_offsets'][0]:e['data_offsets'][1]]),dtype=torch.float32)"
      ".reshape(e['shape'])\n"
      "assert e['dtype']=='F32' and torch.equal(w, torch.arange(6.).reshape(2,3)), w\n"
      "assert h['n']['dtype']=='I64' and h['n']['shape']==[1]\n";
  std::ofstream(path("check.py")) << script;
  EXPECT_EQ(std::system(("/usr/bin/python3 " + path("check.py") + " " + path("ours.safetensors")).c_str()), 0);
}

TEST_F(Checkpoint, CorruptFilesGiveClearErrors) {
  save_safetensors(path("good.safetensors"), {{"x", arange(0, 100)}});
  std::string bytes;
  {
    std::ifstream in(path("good.safetensors"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  };
  EXPECT_NE(error_of([&] { load_safetensors(write("t1", bytes.substr(0, bytes.size() - 10))); }).find("outside"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors(write("t2", bytes.substr(0, 5))); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors(write("t3", bytes.substr(0, 20))); }).find("truncated"), std::string::npos);
  std::string garbled = bytes;
  garbled[8] = '#';  // the header's opening brace
  EXPECT_NE(error_of([&] { load_safetensors(write("t4", garbled)); }).find("corrupt JSON"), std::string::npos);
  std::string huge = bytes;
  huge[7] = 0x7f;
  EXPECT_NE(error_of([&] { load_safetensors(write("t5", huge)); }).find("implausible"), std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors(path("nope")); }).find("cannot open"), std::string::npos);
  std::string dtype = bytes;
  dtype.replace(dtype.find("F32"), 3, "Q32");
  EXPECT_NE(error_of([&] { load_safetensors(write("t6", dtype)); }).find("Q32"), std::string::npos);
}

TEST_F(Checkpoint, ModelAndOptimizerStateRoundTrip) {
  nn::UNet a({3, 1, 4, 2, true, 1}), b({3, 1, 4, 2, true, 2});
  optim::Adam opt_a(a.named_parameters(), {1e-2}), opt_b(b.named_parameters(), {1e-2});
  Generator g(0);
  Tensor x = randn({1, 3, 8, 8}, g);
  sum(a(x)).backward();
  opt_a.step();
  save_checkpoint(path("m.safetensors"), a, &opt_a);
  load_checkpoint(path("m.safetensors"), b, &opt_b);
  for (const auto& [k, t] : a.state_dict()) EXPECT_TRUE(test::all_close(b.state_dict().at(k), t, 0)) << k;
  EXPECT_EQ(opt_b.steps(), 1);
  EXPECT_TRUE(test::all_close(opt_b.state_dict().at("outc.conv.bias.exp_avg"),
                              opt_a.state_dict().at("outc.conv.bias.exp_avg"), 0));
  // A checkpoint of a different architecture is refused and changes nothing.
  nn::UNet c({3, 1, 8, 2, true, 3});
  auto before = c.state_dict().at("outc.conv.weight").clone();
  const std::string err = error_of([&] { load_checkpoint(path("m.safetensors"), c); });
  EXPECT_NE(err.find("shape mismatch"), std::string::npos) << err;
  EXPECT_TRUE(test::all_close(c.state_dict().at("outc.conv.weight"), before, 0));
}

}  // namespace
}  // namespace gdrt
