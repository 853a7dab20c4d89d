// Modules with named parameters and buffers whose dotted names equal the keys
// of the corresponding PyTorch state_dict.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gdrt/ops.h"
#include "gdrt/tensor.h"

namespace gdrt::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;  // parameters are registered by address
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  NamedTensors named_parameters() const;  // recursive, "child.weight"
  NamedTensors named_buffers() const;
  std::vector<Tensor> parameters() const;
  std::int64_t parameter_count() const;
  // Parameters and buffers, as PyTorch's state_dict().
  std::map<std::string, Tensor> state_dict() const;
  // Validates every key, shape and dtype first, then copies: a mismatch
  // throws gdrt::Error naming the key and leaves the module unchanged.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves every parameter and buffer to `device` (in place).
  void to(Device device);
  void zero_grad();

 protected:
  // `member` is a field of the derived module; undefined tensors are skipped
  // (a conv without bias has no "bias" key, as in PyTorch).
  void register_parameter(std::string name, Tensor& member);
  void register_buffer(std::string name, Tensor& member);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    children_.emplace_back(std::move(name), m);
    return m;
  }

 private:
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;
  std::vector<std::pair<std::string, Tensor*>> params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Kaiming-uniform initialisation as PyTorch's defaults, from `gen`.
class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, Conv2dOptions options, bool bias, Generator& gen);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  Conv2dOptions options_;
};

class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride, bool bias,
                  Generator& gen);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  std::int64_t stride_;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(std::int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) as one fused op.
  Tensor forward_relu(const Tensor& x);
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  Tensor run(const Tensor& x, bool relu);
  double eps_, momentum_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(std::int64_t kernel) : kernel_(kernel) {}
  Tensor forward(const Tensor& x) override { return max_pool2d(x, kernel_); }

 private:
  std::int64_t kernel_;
};

// Children are named "0", "1", ... as in torch.nn.Sequential. A BatchNorm2d
// directly followed by a ReLU runs as one fused batch_norm_relu.
class Sequential : public Module {
 public:
  Sequential& add(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

// The common segmentation UNet: DoubleConv (conv3x3-BN-ReLU twice), Down =
// maxpool + DoubleConv, Up = ConvTranspose2d(k2, s2) + cat + DoubleConv,
// OutConv 1x1 with bias. Input H and W must be divisible by 2^depth.
struct UNetOptions {
  std::int64_t in_channels = 3, classes = 1, base = 64, depth = 4;
  bool batch_norm = true;
  std::uint64_t seed = 0;
};

class UNet : public Module {
 public:
  explicit UNet(UNetOptions options);
  Tensor forward(const Tensor& x) override;
  const UNetOptions& options() const { return options_; }

 private:
  UNetOptions options_;
  std::shared_ptr<Module> inc_;
  std::vector<std::shared_ptr<Module>> down_, up_conv_;
  std::vector<std::shared_ptr<ConvTranspose2d>> up_;
  std::shared_ptr<Conv2d> outc_;
};

}  // namespace gdrt::nn
