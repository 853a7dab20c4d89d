// Choosing and moving between devices as Flux and PyTorch users expect:
// Device("cuda:1"), GDRT_DEVICE, the first functional GPU else cpu, to() for
// tensors, modules and optimiser state, and checkpoints that load anywhere.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gdrt/gdrt.h"
#include "scratch_dir.h"
#include "test_support.h"

namespace gdrt {
namespace {

// Sets GDRT_DEVICE for one scope, restoring what was there.
class DeviceEnv {
 public:
  explicit DeviceEnv(const char* value) {
    if (const char* old = std::getenv("GDRT_DEVICE")) saved_ = old, had_ = true;
    if (value) setenv("GDRT_DEVICE", value, 1);
    else unsetenv("GDRT_DEVICE");
  }
  ~DeviceEnv() {
    if (had_) setenv("GDRT_DEVICE", saved_.c_str(), 1);
    else unsetenv("GDRT_DEVICE");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

TEST(DeviceSelection, DevicesAreNamedAsInPyTorch) {
  EXPECT_EQ(Device("cuda:1"), (Device{DeviceKind::cuda, 1}));
  EXPECT_EQ(Device("emu"), (Device{DeviceKind::emu, 0}));
  EXPECT_EQ(Device("cpu"), cpu_device());
  EXPECT_EQ(Device("emu:2").str(), "emu:2");
  EXPECT_THROW(Device("gpu"), Error);
  EXPECT_THROW(Device("cuda:-1"), Error);
  EXPECT_THROW(Device("cpu:1"), Error);
}

TEST(DeviceSelection, AnExplicitDeviceWinsOverTheEnvironmentWhichWinsOverTheDefault) {
  DeviceEnv env("emu:1");
  EXPECT_EQ(preferred_device("cpu"), cpu_device());
  EXPECT_EQ(preferred_device(), (Device{DeviceKind::emu, 1}));
}

TEST(DeviceSelection, WithoutAChoiceItIsTheFirstFunctionalGpuElseCpu) {
  DeviceEnv env(nullptr);
  const Device gpu{DeviceKind::cuda, 0};
  const Device chosen = preferred_device();
  if (functional(gpu)) {
    EXPECT_EQ(chosen, gpu);
  } else if (chosen != cpu_device()) {
    EXPECT_TRUE(chosen.kind == DeviceKind::cuda && functional(chosen)) << chosen.str();
  }
}

// A GPU that exists, working or not; only whether it works is ever asked.
class StandInGpu final : public Backend {
 public:
  StandInGpu(int index, bool works) : index_(index), works_(works) {}
  Device device() const override { return {DeviceKind::cuda, index_}; }
  bool functional() const override { return works_; }
  void* allocate(std::size_t, StreamId) override { throw Error("not a real GPU"); }
  void deallocate(void*, std::size_t, StreamId, const std::vector<StreamId>&) override {}
  void* allocate_pinned(std::size_t) override { throw Error("not a real GPU"); }
  void deallocate_pinned(void*, std::size_t) override {}
  void copy(void*, MemoryKind, const void*, MemoryKind, std::size_t, StreamId, std::uint64_t) override {
    throw Error("not a real GPU");
  }
  void launch(const KernelOp&, StreamId, std::uint64_t) override { throw Error("not a real GPU"); }
  StreamId create_stream(StreamFlags) override { throw Error("not a real GPU"); }
  void destroy_stream(StreamId) override {}
  EventId record_event(StreamId) override { throw Error("not a real GPU"); }
  void destroy_event(EventId) override {}
  void wait_event(StreamId, EventId) override {}
  void synchronize_event(EventId) override {}
  void synchronize(StreamId) override {}
  void synchronize_device() override {}
  bool host_accessible() const override { return false; }

 private:
  int index_;
  bool works_;
};

// What preferred_device() picks on a machine of `count` GPUs of which those
// in `working` run. In a child process: the stand-ins replace this build's
// cuda backend, which the rest of the tests keep.
std::string preferred_among(int count, std::vector<int> working) {
  // A death test's child reports its result through its exit code: the
  // preferred GPU's index, or 100 for the cpu.
  int picked = -1;
  EXPECT_EXIT(
      {
        unsetenv("GDRT_DEVICE");
        register_backend(
            DeviceKind::cuda,
            [working](int index) -> std::unique_ptr<Backend> {
              if (index >= 8) throw Error("no such GPU");
              return std::make_unique<StandInGpu>(
                  index, std::find(working.begin(), working.end(), index) != working.end());
            },
            [count] { return count; });
        const Device d = preferred_device();
        std::_Exit(d.kind == DeviceKind::cuda ? d.index : 100);
      },
      [&](int status) {
        picked = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return true;
      },
      "");
  return picked == 100 ? "cpu" : picked < 0 ? "no answer" : "cuda:" + std::to_string(picked);
}

TEST(DeviceSelection, TheFirstGpuThatWorksIsPreferredNotOnlyTheFirstGpu) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts afresh: this process has threads
  EXPECT_EQ(preferred_among(3, {1, 2}), "cuda:1");
  EXPECT_EQ(preferred_among(3, {0, 2}), "cuda:0");
  EXPECT_EQ(preferred_among(2, {}), "cpu");
  EXPECT_EQ(preferred_among(2, {5}), "cpu") << "a GPU beyond the count is not looked for";
  EXPECT_EQ(preferred_among(0, {0}), "cpu") << "no GPU counted, none tried";
}

TEST(DeviceSelection, ABadEnvironmentValueIsAnErrorNamingTheVariable) {
  DeviceEnv env("tpu");
  try {
    (void)preferred_device();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GDRT_DEVICE"), std::string::npos) << e.what();
  }
}

TEST(DeviceSelection, FunctionalSaysWhetherADeviceCanRunAndNeverThrows) {
  EXPECT_TRUE(functional(cpu_device()));
  EXPECT_TRUE(functional(test::emu_device()));
  if (!backend_registered(DeviceKind::cuda)) {
    EXPECT_FALSE(functional(Device{DeviceKind::cuda, 0}));
  }
  EXPECT_FALSE(functional(Device{DeviceKind::cuda, 97}));
}

TEST(DeviceSelection, MovingAModuleKeepsAnOptimiserMadeBeforeWorking) {
  nn::UNet model({3, 1, 4, 2, true, 1});
  optim::Adam opt(model.named_parameters(), {1e-2});
  Generator g(0);
  const Tensor x = randn({2, 3, 8, 8}, g);
  sum(model(x)).backward();
  opt.step();  // state is made on cpu
  model.to(test::emu_device());
  opt.to(test::emu_device());
  for (const auto& [name, p] : opt.params()) EXPECT_EQ(p.device(), test::emu_device()) << name;
  for (const auto& [name, s] : opt.state_dict())
    if (name != "step") {
      EXPECT_EQ(s.device(), test::emu_device()) << name;
    }
  opt.zero_grad();
  sum(model(x.to(test::emu_device()))).backward();
  opt.step();
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().device(), test::emu_device()) << name;
  }
}

TEST(DeviceSelection, ACheckpointSavedOnOneDeviceLoadsOnAnother) {
  const auto path = (std::filesystem::temp_directory_path() /
                     ("gdrt_devices_" + std::to_string(::getpid()) + ".safetensors")).string();
  nn::UNet on_emu({3, 1, 4, 2, true, 1}), on_cpu({3, 1, 4, 2, true, 2});
  on_emu.to(test::emu_device());
  optim::Adam opt_emu(on_emu.named_parameters(), {1e-2}), opt_cpu(on_cpu.named_parameters(), {1e-2});
  Generator g(0);
  sum(on_emu(randn({1, 3, 8, 8}, g).to(test::emu_device()))).backward();
  opt_emu.step();
  save_checkpoint(path, on_emu, &opt_emu);
  load_checkpoint(path, on_cpu, &opt_cpu);
  std::filesystem::remove(path);
  for (const auto& [k, t] : on_emu.state_dict()) {
    EXPECT_EQ(on_cpu.state_dict().at(k).device(), cpu_device()) << k;
    EXPECT_TRUE(test::all_close(on_cpu.state_dict().at(k), t.to(cpu_device()), 0)) << k;
  }
  EXPECT_EQ(opt_cpu.state_dict().at("outc.conv.bias.exp_avg").device(), cpu_device());
}

// Two accelerators do not share pointers: a copy between them is staged
// through the host, and its gradient goes back the same way.
TEST(DeviceSelection, ACopyBetweenTwoDevicesKeepsItsValuesAndGradient) {
  const Device emu0("emu:0"), emu1("emu:1");
  Tensor a = arange(0, 6, 1, TensorOptions{}.with_device(emu0));
  a.requires_grad_();
  Tensor b = a.to(emu1);
  EXPECT_EQ(b.device(), emu1);
  EXPECT_TRUE(test::all_close(b.to(cpu_device()), arange(0, 6), 0));
  sum(b * b).backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().device(), emu0);
  EXPECT_TRUE(test::all_close(a.grad().to(cpu_device()), arange(0, 12, 2), 0));
}

// The other way round: saved on the CPU, loaded into a model on emu.
TEST(DeviceSelection, ACheckpointSavedOnTheCpuLoadsOntoADevice) {
  const std::string path = gpudiag::test::scratch_dir("cpu-checkpoint") + "/unet.safetensors";
  nn::UNet on_cpu({3, 1, 4, 2, true, 1}), on_emu({3, 1, 4, 2, true, 2});
  on_emu.to(test::emu_device());
  save_checkpoint(path, on_cpu);
  load_checkpoint(path, on_emu);
  for (const auto& [k, t] : on_cpu.state_dict()) {
    EXPECT_EQ(on_emu.state_dict().at(k).device(), test::emu_device()) << k;
    EXPECT_TRUE(test::all_close(on_emu.state_dict().at(k).to(cpu_device()), t, 0)) << k;
  }
}

TEST(DeviceSelection, MixingDevicesInOneOpNamesTheOpAndBothDevices) {
  try {
    (void)matmul(ones({2, 2}), ones({2, 2}).to(test::emu_device()));
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.rule(), "GD001");
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    EXPECT_NE(m.find("emu:0"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace gdrt
