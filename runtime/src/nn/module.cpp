// Module: registration, recursive naming, state_dict load/save, train/eval.
#include <cmath>
#include <set>

#include "core/impl.h"
#include "gdrt/nn.h"

namespace gdrt::nn {

void Module::register_parameter(std::string name, Tensor& member) {
  if (!member.defined()) return;
  member.requires_grad_(true);
  params_.emplace_back(std::move(name), &member);
}

void Module::register_buffer(std::string name, Tensor& member) {
  if (member.defined()) buffers_.emplace_back(std::move(name), &member);
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [name, t] : params ? params_ : buffers_) out.emplace_back(prefix + name, *t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (auto& [_, t] : named_parameters()) n += t.numel();
  return n;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [k, t] : named_parameters()) out[k] = t.detach();
  for (auto& [k, t] : named_buffers()) out[k] = t.detach();
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  NamedTensors targets = named_parameters();
  for (auto& b : named_buffers()) targets.push_back(b);
  std::set<std::string> known;
  std::string missing;
  for (const auto& [key, target] : targets) {
    known.insert(key);
    auto it = state.find(key);
    if (it == state.end()) {
      if (strict) missing += (missing.empty() ? "" : ", ") + key;
      continue;
    }
    const Tensor& src = it->second;
    if (src.shape() != target.shape())
      throw Error("load_state_dict: shape mismatch for \"" + key + "\": the checkpoint has " + shape_str(src.shape()) +
                  " but the model expects " + shape_str(target.shape()) + "; nothing was loaded");
    if (src.dtype() != target.dtype())
      throw Error("load_state_dict: dtype mismatch for \"" + key + "\": the checkpoint has " +
                  std::string(dtype_name(src.dtype())) + " but the model expects " +
                  std::string(dtype_name(target.dtype())) + "; nothing was loaded");
  }
  if (!missing.empty()) throw Error("load_state_dict: missing keys: " + missing + "; nothing was loaded");
  if (strict) {
    std::string unexpected;
    for (const auto& [key, _] : state)
      if (!known.count(key)) unexpected += (unexpected.empty() ? "" : ", ") + key;
    if (!unexpected.empty()) throw Error("load_state_dict: unexpected keys: " + unexpected + "; nothing was loaded");
  }
  NoGrad ng;
  for (auto& [key, target] : targets) {
    auto it = state.find(key);
    if (it == state.end()) continue;
    Tensor dst = target;
    dst.copy_(it->second.to(target.device()));
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, c] : children_) c->train(on);
}

void Module::to(Device device) {
  // In place, as PyTorch's: an optimiser made before the move holds the same
  // tensors and keeps working.
  for (auto& [_, t] : params_) move_in_place(*t, device);
  for (auto& [_, t] : buffers_) move_in_place(*t, device);
  for (auto& [_, c] : children_) c->to(device);
}

void Module::zero_grad() {
  for (auto& [_, t] : params_) t->zero_grad();
  for (auto& [_, c] : children_) c->zero_grad();
}

Sequential& Sequential::add(std::shared_ptr<Module> m) {
  layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(layers_[i].get());
    if (bn && i + 1 < layers_.size() && dynamic_cast<ReLU*>(layers_[i + 1].get())) {
      h = bn->forward_relu(h);  // one pass instead of two, one backward node
      ++i;
      continue;
    }
    h = layers_[i]->forward(h);
  }
  return h;
}

}  // namespace gdrt::nn
