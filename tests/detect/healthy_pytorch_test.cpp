// The loops people really write in PyTorch are healthy: each idiom below,
// shaped as a trace of the whole run and as torch.profiler's steps record
// it, on a GPU-bound and on a launch-bound UNet, gives no warning and no
// error, and no note about syncs or scalar reads. Beside each, the mistake
// it is nearest to is still found. The programs are samples/healthy-pytorch/.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "detect_support.h"
#include "torch_loop.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

constexpr int kSteps = 40;
constexpr int kStepsPerEpoch = 10;
constexpr std::uint64_t kBatchBytes = 6ull << 20;

// A UNet of depth 4 with BatchNorm: 22 convolutions and 18 BatchNorms.
constexpr int kConvolutions = 22;
constexpr int kBatchNorms = 18;

void forward(TorchLoop& l, const std::string& conv = "cudnn_conv_fprop") {
  for (int i = 0; i < kConvolutions; ++i) {
    l.op(conv + std::to_string(i));
    if (i < kBatchNorms) l.op("batch_norm_forward" + std::to_string(i), l.pace().kernel_ns / 4);
  }
  l.op("binary_cross_entropy_with_logits", l.pace().kernel_ns / 4);
}

void backward(TorchLoop& l) {
  for (int i = kConvolutions - 1; i >= 0; --i) {
    if (i < kBatchNorms) l.op("batch_norm_backward" + std::to_string(i), l.pace().kernel_ns / 4);
    l.op("cudnn_conv_dgrad" + std::to_string(i));
    l.op("cudnn_conv_wgrad" + std::to_string(i));
  }
}

void adam(TorchLoop& l) {
  l.op("multi_tensor_apply_kernel<AdamFunctor>", l.pace().kernel_ns / 2);
  l.op("multi_tensor_apply_kernel<AdamFunctor>", l.pace().kernel_ns / 2);
}

// Model to the device, cuDNN's autotuning: start-up, before the loop.
void start_up(TorchLoop& l) {
  l.device_segment(0x7f0000000000, 256ull << 20);
  for (int i = 0; i < kConvolutions; ++i) l.batch_to_device(64 << 10, MemKind::Pageable);
  for (int i = 0; i < 30; ++i) {
    l.op("cudnn_benchmark_candidate" + std::to_string(i));
    l.synchronize();
  }
  l.python(500'000'000);
}

void train_step(TorchLoop& l) {
  l.batch_to_device(kBatchBytes, MemKind::Pinned);
  forward(l);
  backward(l);
  adam(l);
}

// The state_dict's tensors to the CPU, as torch.save(model.state_dict())
// does: each convolution's weight, each BatchNorm's weight, bias, running
// mean and variance, and its 8-byte num_batches_tracked.
void save_checkpoint(TorchLoop& l) {
  for (int i = 0; i < kConvolutions; ++i) {
    l.to_cpu(4ull * 64 * 64 * 9);
    if (i < kBatchNorms) {
      for (int k = 0; k < 4; ++k) l.to_cpu(64 * 4);
      l.to_cpu(8);
    }
  }
  l.python(20'000'000);  // pickling and writing the file
}

struct Idiom {
  std::string name;
  std::function<void(TorchLoop&)> start;       // after the common start-up
  std::function<void(TorchLoop&, int)> step;   // step number
};

std::vector<Idiom> healthy_idioms() {
  return {
      {"loss_item_every_step", {}, [](TorchLoop& l, int) {
         train_step(l);
         l.item();
       }},
      {"loss_item_every_ten_steps", {}, [](TorchLoop& l, int s) {
         train_step(l);
         if (s % 10 == 9) l.item();
       }},
      // GradScaler: the loss scaled, the gradients unscaled with an inf
      // check whose result step() reads (a sync every step), the scale
      // updated; the loss logged too.
      {"amp_grad_scaler", {}, [](TorchLoop& l, int) {
         l.batch_to_device(kBatchBytes, MemKind::Pinned);
         l.op("cast_to_half", l.pace().kernel_ns / 4);
         forward(l, "cudnn_conv_fprop_fp16_");
         l.op("mul_by_scale", l.pace().kernel_ns / 8);
         backward(l);
         l.op("_amp_foreach_non_finite_check_and_unscale_", l.pace().kernel_ns / 2);
         l.item();  // found_inf
         adam(l);
         l.op("_amp_update_scale_", l.pace().kernel_ns / 8);
         l.item();  // the loss, for the progress line
       }},
      // clip_grad_norm_: the total norm on the device, the gradients scaled by it; nothing read.
      {"gradient_clipping", {}, [](TorchLoop& l, int) {
         l.batch_to_device(kBatchBytes, MemKind::Pinned);
         forward(l);
         backward(l);
         l.op("multi_tensor_apply_kernel<LpNormFunctor>", l.pace().kernel_ns / 2);
         l.op("lp_norm_cleanup", l.pace().kernel_ns / 8);
         l.op("clamp_max", l.pace().kernel_ns / 8);
         l.op("multi_tensor_apply_kernel<BinaryOpScalarTensorFunctor>", l.pace().kernel_ns / 2);
         adam(l);
         l.item();
       }},
      // DataLoader(num_workers=4, pin_memory=True): the pin-memory thread
      // pins each batch (the caching host allocator's blocks, cudaHostAlloc'd
      // while it fills, and their events queried), the loop copies them with
      // non_blocking=True.
      {"dataloader_workers_pinned",
       [](TorchLoop& l) {
         for (int b = 0; b < 8; ++b) l.pinned_alloc(2, 0x7e0000000000 + (static_cast<std::uint64_t>(b) << 24), kBatchBytes);
       },
       [](TorchLoop& l, int) {
         l.call_on_thread(2, "cudaEventQuery", 2'000);
         l.call_on_thread(2, "cudaHostGetDevicePointer", 1'000);
         train_step(l);
         l.call_on_thread(1, "cudaEventRecord", 3'000);
         l.item();
       }},
      // Every epoch, the validation set under torch.no_grad(), its accuracy
      // read per batch.
      {"validation_every_epoch", {}, [](TorchLoop& l, int s) {
         train_step(l);
         l.item();
         if (s % kStepsPerEpoch == kStepsPerEpoch - 1)
           for (int b = 0; b < 5; ++b) {
             l.batch_to_device(kBatchBytes, MemKind::Pinned);
             forward(l);
             l.op("argmax_eq_sum", l.pace().kernel_ns / 8);
             l.item(8);
           }
       }},
      {"checkpoint_from_state_dict", {}, [](TorchLoop& l, int s) {
         train_step(l);
         l.item();
         if (s % kStepsPerEpoch == kStepsPerEpoch - 1) save_checkpoint(l);
       }},
      // channels_last: cuDNN's NHWC kernels, the input converted each step.
      {"channels_last", {}, [](TorchLoop& l, int) {
         l.batch_to_device(kBatchBytes, MemKind::Pinned);
         l.op("nchwToNhwcKernel", l.pace().kernel_ns / 4);
         forward(l, "sm90_xmma_fprop_implicit_gemm_nhwckrsc_nhwc_");
         backward(l);
         adam(l);
         l.item();
       }},
      // An EMA of the weights after each step, one foreach op pair.
      {"ema_of_weights", {}, [](TorchLoop& l, int) {
         train_step(l);
         l.op("multi_tensor_apply_kernel<BinaryOpScalarFunctor<mul>>", l.pace().kernel_ns / 2);
         l.op("multi_tensor_apply_kernel<PointwiseOpScalarFunctor<add>>", l.pace().kernel_ns / 2);
         l.item();
       }},
      // torch.compile: seconds of compiling and Triton's autotuning (each
      // candidate timed between syncs) in the first step, then fused Triton
      // kernels launched through the driver.
      {"torch_compile",
       [](TorchLoop& l) {
         l.python(3'000'000'000);
         for (int c = 0; c < 40; ++c) {
           l.op("triton_autotune_candidate" + std::to_string(c), l.pace().kernel_ns, "cuLaunchKernel");
           l.synchronize();
         }
       },
       [](TorchLoop& l, int) {
         l.batch_to_device(kBatchBytes, MemKind::Pinned);
         for (int k = 0; k < 30; ++k)
           l.op("triton_per_fused_convolution_relu_" + std::to_string(k), l.pace().kernel_ns * 2, "cuLaunchKernel");
         adam(l);
         l.item();
       }},
  };
}

struct Case {
  Idiom idiom;
  LoopPace pace;
  bool profiler_steps;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.idiom.name; }

Trace program(const Idiom& idiom, LoopPace pace, bool profiler_steps) {
  TorchLoop loop(pace, profiler_steps);
  start_up(loop);
  if (idiom.start) idiom.start(loop);
  for (int s = 0; s < kSteps; ++s) loop.step([&](TorchLoop& l) { idiom.step(l, s); });
  return loop.finish();
}

class HealthyPytorch : public ::testing::TestWithParam<Case> {};

TEST_P(HealthyPytorch, NoWarningNoErrorAndNothingAboutSyncsOrScalarReads) {
  const Case& c = GetParam();
  const Trace t = program(c.idiom, c.pace, c.profiler_steps);
  ASSERT_GE(find_phases(t).iterations.size(), 4u) << "the loop is found";
  for (const Finding& f : detect(t)) {
    EXPECT_LT(f.severity, Severity::Warning) << f.rule_id << ": " << f.message;
    EXPECT_NE(f.rule_id, "GD010") << f.message;
    EXPECT_NE(f.rule_id, "GD005") << f.message;
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const Idiom& i : healthy_idioms())
    for (const LoopPace pace : {kGpuBound, kLaunchBound})
      for (const bool profiler : {false, true}) all.push_back({i, pace, profiler});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Idioms, HealthyPytorch, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  return c.idiom.name + (c.pace.kernel_ns == kGpuBound.kernel_ns ? "_gpu_bound" : "_launch_bound") +
         (c.profiler_steps ? "_profiled" : "_traced");
});

// The mistakes nearest to the idioms, in the same loops, are still found.

Trace with_step(LoopPace pace, bool profiler_steps, const std::function<void(TorchLoop&)>& step) {
  return program({"mistake", {}, [&](TorchLoop& l, int) { step(l); }}, pace, profiler_steps);
}

// torch.cuda.synchronize() after every block: where the host sets the pace,
// each wait is the GPU's too.
TEST(HealthyPytorchMistakes, ASyncAfterEveryBlockOfALaunchBoundLoopIsAWarning) {
  for (const bool profiler : {false, true}) {
    const Trace t = with_step(kLaunchBound, profiler, [](TorchLoop& l) {
      l.batch_to_device(kBatchBytes, MemKind::Pinned);
      for (int block = 0; block < 8; ++block) {
        for (int i = 0; i < 5; ++i) l.op("cudnn_conv_fprop" + std::to_string(block * 5 + i));
        l.synchronize();
      }
      adam(l);
      l.item();
    });
    const auto f = only(detect(t), "GD010");
    ASSERT_EQ(f.size(), 1u) << (profiler ? "profiled" : "traced");
    EXPECT_EQ(f[0].severity, Severity::Warning) << f[0].message;
  }
}

// A GPU-bound loop that waits after every block loses a launch's time per
// wait: little, but eight waits a step serialise it.
TEST(HealthyPytorchMistakes, ASyncAfterEveryBlockOfAGpuBoundLoopIsANote) {
  const Trace t = with_step(kGpuBound, false, [](TorchLoop& l) {
    l.batch_to_device(kBatchBytes, MemKind::Pinned);
    for (int block = 0; block < 8; ++block) {
      for (int i = 0; i < 5; ++i) l.op("cudnn_conv_fprop" + std::to_string(block * 5 + i));
      l.synchronize();
    }
  });
  const auto f = only(detect(t), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Note) << f[0].message;
}

// A loss read every step of a loop whose host waits for a slow GPU and then
// spends as long again preparing the next batch: the GPU idles while the host
// works, so the waits could have overlapped that work.
TEST(HealthyPytorchMistakes, AReadEveryStepThatKeepsTheHostFromPreparingTheNextBatchIsAWarning) {
  const Trace t = with_step(kGpuBound, false, [](TorchLoop& l) {
    train_step(l);
    l.item();
    l.python(30'000'000);  // augmentation on the main thread
  });
  const auto f = only(detect(t), "GD010");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Warning) << f[0].message;
  EXPECT_NE(f[0].message.find("the syncs cost at most"), std::string::npos) << f[0].message;
}

// A metric read element by element, as `for v in acc: v.item()`.
TEST(HealthyPytorchMistakes, ReadingATensorElementByElementIsScalarIndexing) {
  const Trace t = with_step(kGpuBound, false, [](TorchLoop& l) {
    train_step(l);
    for (int i = 0; i < 16; ++i) l.item();
  });
  EXPECT_EQ(only(detect(t), "GD005").size(), 1u);
}

// Batches from pageable memory with non_blocking=True: the copy holds the host.
TEST(HealthyPytorchMistakes, UnpinnedBatchesCopiedAsynchronouslyArePageableAsyncCopies) {
  const Trace t = with_step(kLaunchBound, false, [](TorchLoop& l) {
    l.batch_to_device(kBatchBytes, MemKind::Pageable);
    forward(l);
    backward(l);
    adam(l);
  });
  EXPECT_EQ(only(detect(t), "GD009").size(), 1u);
}

}  // namespace
}  // namespace gpudiag
