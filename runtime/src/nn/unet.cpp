// UNet(in_channels, classes, base, depth, batch_norm), laid out so its
// state_dict keys match the common PyTorch UNet:
//   inc.double_conv.{0,1,3,4}, down{i}.maxpool_conv.1.double_conv.*,
//   up{i}.up.{weight,bias}, up{i}.conv.double_conv.*, outc.conv.{weight,bias}.
#include "core/impl.h"
#include "gdrt/nn.h"

namespace gdrt::nn {
namespace {

// conv3x3 [-BN] - ReLU, twice. With batch norm the convs have no bias.
class DoubleConv : public Module {
 public:
  DoubleConv(std::int64_t in, std::int64_t out, bool bn, Generator& gen) {
    seq_ = register_module("double_conv", std::make_shared<Sequential>());
    for (std::int64_t c_in : {in, out}) {
      seq_->add(std::make_shared<Conv2d>(c_in, out, 3, Conv2dOptions{1, 1, 1}, !bn, gen));
      if (bn) seq_->add(std::make_shared<BatchNorm2d>(out));
      seq_->add(std::make_shared<ReLU>());
    }
  }
  Tensor forward(const Tensor& x) override { return seq_->forward(x); }

 private:
  std::shared_ptr<Sequential> seq_;
};

class Holder : public Module {  // names a child ("maxpool_conv", "conv")
 public:
  Holder(const std::string& name, std::shared_ptr<Module> m) : m_(register_module(name, std::move(m))) {}
  Tensor forward(const Tensor& x) override { return m_->forward(x); }

 private:
  std::shared_ptr<Module> m_;
};

class UpBlock : public Module {
 public:
  UpBlock(std::shared_ptr<ConvTranspose2d> up, std::shared_ptr<Module> conv) {
    register_module("up", std::move(up));
    register_module("conv", std::move(conv));
  }
  Tensor forward(const Tensor& x) override { return x; }  // UNet::forward drives the pieces
};

}  // namespace

UNet::UNet(UNetOptions o) : options_(o) {
  if (o.in_channels < 1 || o.classes < 1 || o.base < 1 || o.depth < 1 || o.depth > 8)
    throw Error("UNet: need in_channels, classes, base >= 1 and 1 <= depth <= 8");
  Generator gen(o.seed);
  auto dc = [&](std::int64_t in, std::int64_t out) { return std::make_shared<DoubleConv>(in, out, o.batch_norm, gen); };
  inc_ = register_module("inc", dc(o.in_channels, o.base));
  for (std::int64_t i = 1; i <= o.depth; ++i) {
    auto seq = std::make_shared<Sequential>();
    seq->add(std::make_shared<MaxPool2d>(2));
    seq->add(dc(o.base << (i - 1), o.base << i));
    register_module("down" + std::to_string(i), std::make_shared<Holder>("maxpool_conv", seq));
    down_.push_back(seq);
  }
  for (std::int64_t i = 1; i <= o.depth; ++i) {
    const std::int64_t in = o.base << (o.depth - i + 1), out = o.base << (o.depth - i);
    auto up = std::make_shared<ConvTranspose2d>(in, in / 2, 2, 2, true, gen);
    auto conv = dc(in, out);
    register_module("up" + std::to_string(i), std::make_shared<UpBlock>(up, conv));
    up_.push_back(up);
    up_conv_.push_back(conv);
  }
  outc_ = std::make_shared<Conv2d>(o.base, o.classes, 1, Conv2dOptions{}, true, gen);
  register_module("outc", std::make_shared<Holder>("conv", outc_));
}

Tensor UNet::forward(const Tensor& x) {
  const std::int64_t multiple = std::int64_t{1} << options_.depth;
  if (x.dim() != 4 || x.size(1) != options_.in_channels || x.size(2) % multiple || x.size(3) % multiple)
    throw Error("UNet: expected input [N, " + std::to_string(options_.in_channels) + ", H, W] with H and W divisible by " +
                std::to_string(multiple) + ", got " + shape_str(x.shape()));
  std::vector<Tensor> skips{inc_->forward(x)};
  for (auto& d : down_) skips.push_back(d->forward(skips.back()));
  Tensor h = skips.back();
  for (std::size_t i = 0; i < up_.size(); ++i) {
    Tensor up = up_[i]->forward(h);
    h = up_conv_[i]->forward(cat({skips[skips.size() - 2 - i], up}, 1));  // cat([skip, upsampled]) as PyTorch
  }
  return outc_->forward(h);
}

}  // namespace gdrt::nn
