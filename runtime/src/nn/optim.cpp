// SGD with momentum, Adam and AdamW, following PyTorch's update rules.
#include "gdrt/optim.h"

#include <cmath>

#include "core/impl.h"

namespace gdrt::optim {

Optimizer::Optimizer(nn::NamedTensors params) : params_(std::move(params)) {
  for (auto& [name, p] : params_)
    if (!p.requires_grad()) throw Error("optimizer: parameter \"" + name + "\" does not require grad");
}

void Optimizer::zero_grad() {
  for (auto& [_, p] : params_) p.zero_grad();
}

void Optimizer::step() {
  NoGrad ng;
  ++steps_;
  for (auto& [name, p] : params_) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.shape() != p.shape())
      throw Error("optimizer: gradient of \"" + name + "\" has shape " + shape_str(g.shape()) + ", parameter " +
                  shape_str(p.shape()));
    update(name, p, g);
  }
}

Tensor& Optimizer::slot(const std::string& param, const std::string& slot, const Tensor& like) {
  auto [it, inserted] = state_.try_emplace(param + "." + slot);
  if (inserted) it->second = zeros_like(like);
  return it->second;
}

bool Optimizer::has_slot(const std::string& param, const std::string& slot) const {
  return state_.count(param + "." + slot) != 0;
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> out = state_;
  out["step"] = full({}, static_cast<double>(steps_), TensorOptions{}.with_dtype(DType::i64));
  return out;
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  auto step = state.find("step");
  if (step == state.end()) throw Error("optimizer state: missing \"step\"");
  std::map<std::string, Tensor> fresh;
  for (const auto& [key, t] : state) {
    if (key == "step") continue;
    const nn::NamedTensors::value_type* owner = nullptr;
    for (const auto& pr : params_)
      if (key.size() > pr.first.size() + 1 && key.compare(0, pr.first.size(), pr.first) == 0 &&
          key[pr.first.size()] == '.' && key.find('.', pr.first.size() + 1) == std::string::npos)
        owner = &pr;
    if (!owner) throw Error("optimizer state: \"" + key + "\" belongs to no parameter of this optimizer");
    if (t.shape() != owner->second.shape())
      throw Error("optimizer state: \"" + key + "\" has shape " + shape_str(t.shape()) + " but parameter \"" +
                  owner->first + "\" has " + shape_str(owner->second.shape()));
    fresh[key] = t.detach().to(owner->second.device()).to(owner->second.dtype()).clone();
  }
  state_ = std::move(fresh);
  steps_ = static_cast<std::int64_t>(step->second.to(cpu_device()).item());
}

void Optimizer::to(Device device) {
  for (auto& [_, t] : state_) move_in_place(t, device);
}

SGD::SGD(nn::NamedTensors params, SGDOptions o) : Optimizer(std::move(params)), o_(o) { lr_ = o.lr; }

void SGD::update(const std::string& name, Tensor& p, const Tensor& grad) {
  Tensor g = o_.weight_decay != 0 ? add(grad, mul(p, o_.weight_decay)) : grad;
  if (o_.momentum != 0) {
    const bool first = !has_slot(name, "momentum_buffer");
    Tensor& buf = slot(name, "momentum_buffer", p);
    if (first) buf.copy_(g);
    else buf.mul_(o_.momentum).add_(g, 1.0 - o_.dampening);
    g = buf;
  }
  p.add_(g, -lr_);
}

Adam::Adam(nn::NamedTensors params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params)), o_(o), decoupled_(decoupled) {
  lr_ = o.lr;
}

void Adam::update(const std::string& name, Tensor& p, const Tensor& grad) {
  Tensor g = grad;
  if (o_.weight_decay != 0) {
    if (decoupled_) p.mul_(1.0 - lr_ * o_.weight_decay);
    else g = add(g, mul(p, o_.weight_decay));
  }
  Tensor& m = slot(name, "exp_avg", p);
  Tensor& v = slot(name, "exp_avg_sq", p);
  const double t = static_cast<double>(steps_);
  const double bc1 = 1.0 - std::pow(o_.beta1, t), bc2 = 1.0 - std::pow(o_.beta2, t);
  const bool fusable = p.dtype() == DType::f32 && g.dtype() == DType::f32 && m.dtype() == DType::f32 &&
                       v.dtype() == DType::f32 && p.is_contiguous() && m.is_contiguous() && v.is_contiguous() &&
                       g.device() == p.device() && m.device() == p.device() && v.device() == p.device();
  if (fusable) {  // one pass over p, g, m and v instead of ten tensor ops
    Tensor gc = g.contiguous();
    launch(p, ops::AdamStep{p.numel(), static_cast<float*>(p.data_ptr()), static_cast<const float*>(gc.data_ptr()),
                            static_cast<float*>(m.data_ptr()), static_cast<float*>(v.data_ptr()),
                            AdamUpdate{o_.beta1, o_.beta2, o_.eps, lr_ / bc1, std::sqrt(bc2)}});
    return;
  }
  m.mul_(o_.beta1).add_(g, 1.0 - o_.beta1);
  v.mul_(o_.beta2).add_(square(g), 1.0 - o_.beta2);
  Tensor denom = add(mul(sqrt(v), 1.0 / std::sqrt(bc2)), o_.eps);
  p.add_(div(m, denom), -lr_ / bc1);
}

}  // namespace gdrt::optim
