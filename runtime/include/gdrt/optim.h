// Optimisers over named parameters; their state is inspectable and
// checkpointable (state_dict keys "<param>.<slot>", plus "step").
#pragma once

#include <map>
#include <string>

#include "gdrt/nn.h"

namespace gdrt::optim {

class Optimizer {
 public:
  explicit Optimizer(nn::NamedTensors params);
  virtual ~Optimizer() = default;
  // Applies one update from the parameters' .grad (params without grad are skipped).
  void step();
  void zero_grad();
  std::int64_t steps() const { return steps_; }
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  // Slots such as "inc.double_conv.0.weight.exp_avg" and "step".
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);
  // Moves the optimiser's state (moments, momentum buffers) to `device`;
  // the parameters move with their module (Module::to).
  void to(Device device);
  const nn::NamedTensors& params() const { return params_; }

 protected:
  virtual void update(const std::string& name, Tensor& param, const Tensor& grad) = 0;
  Tensor& slot(const std::string& param, const std::string& slot, const Tensor& like);
  bool has_slot(const std::string& param, const std::string& slot) const;
  double lr_ = 1e-3;
  std::int64_t steps_ = 0;

 private:
  nn::NamedTensors params_;
  std::map<std::string, Tensor> state_;
};

struct SGDOptions {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
};
class SGD final : public Optimizer {
 public:
  SGD(nn::NamedTensors params, SGDOptions options);

 private:
  void update(const std::string& name, Tensor& param, const Tensor& grad) override;
  SGDOptions o_;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};
// Adam (L2 weight decay added to the gradient) or AdamW (decoupled decay).
class Adam : public Optimizer {
 public:
  Adam(nn::NamedTensors params, AdamOptions options, bool decoupled_weight_decay = false);

 private:
  void update(const std::string& name, Tensor& param, const Tensor& grad) override;
  AdamOptions o_;
  bool decoupled_;
};
class AdamW final : public Adam {
 public:
  AdamW(nn::NamedTensors params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace gdrt::optim
