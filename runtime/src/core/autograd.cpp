// The reverse-mode engine: topological order from the root, one gradient
// per node accumulated from its consumers, leaves accumulate into .grad.
#include "gdrt/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "core/impl.h"
#include "gdrt/ops.h"

namespace gdrt {

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) { return backward_(grad_output); }
void FunctionNode::release() {
  backward_ = nullptr;  // frees the saved tensors captured by the closure
  released_ = true;
}

namespace {

// Sink for a leaf's gradient; holds the leaf weakly so a graph does not keep
// parameters alive.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : Node("accumulate_grad"), leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const Tensor& g) override {
    auto leaf = leaf_.lock();
    if (!leaf) return {};
    Tensor t(leaf);
    Tensor existing = t.grad();
    if (!existing.defined()) {
      Tensor copy = g.detach().clone();
      if (copy.shape() != t.shape()) copy = copy.reshape(t.shape());
      t.set_grad(copy);
    } else {
      existing.add_(g.detach());
    }
    return {};
  }
  void release() override {}  // a leaf's sink is reusable across backwards

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

class NonDifferentiable final : public Node {
 public:
  explicit NonDifferentiable(const std::string& op) : Node(op) {}
  std::vector<Tensor> apply(const Tensor&) override {
    throw Error("backward reached `" + name() + "`, which has no gradient (its output is piecewise constant or "
                "discrete). Call .detach() on its input, or compute it inside a gdrt::NoGrad scope, so the "
                "graph does not pass through it.");
  }
};

}  // namespace

std::shared_ptr<Node> grad_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  auto* impl = t.impl();
  if (impl->grad_fn) return impl->grad_fn;
  if (!impl->grad_accumulator) impl->grad_accumulator = std::make_shared<AccumulateGrad>(t.impl_ptr());
  return impl->grad_accumulator;
}

bool any_requires_grad(const std::vector<const Tensor*>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

static void attach(Tensor& output, std::shared_ptr<Node> node, const std::vector<const Tensor*>& inputs) {
  for (const Tensor* t : inputs) node->next.push_back(t ? grad_edge(*t) : nullptr);
  output.impl()->grad_fn = std::move(node);
  output.impl()->requires_grad = true;
}

void attach_grad_fn(Tensor& output, const std::string& name, const std::vector<const Tensor*>& inputs,
                    FunctionNode::Backward backward) {
  if (!any_requires_grad(inputs)) return;
  attach(output, std::make_shared<FunctionNode>(name, std::move(backward)), inputs);
}

void attach_non_differentiable(Tensor& output, const std::string& name, const std::vector<const Tensor*>& inputs) {
  if (!any_requires_grad(inputs)) return;
  attach(output, std::make_shared<NonDifferentiable>(name), inputs);
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }
bool Tensor::is_leaf() const { return !impl_ || !impl_->grad_fn; }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return impl_->grad_fn; }

Tensor& Tensor::requires_grad_(bool value) {
  if (!is_leaf())
    throw Error("requires_grad_() on a non-leaf tensor (the result of `" + impl_->grad_fn->name() +
                "`); call it on the tensors you create, or use .detach().requires_grad_()");
  if (value && !is_floating(dtype()))
    throw Error("only floating-point tensors can require gradients, got " + describe());
  impl_->requires_grad = value;
  return *this;
}

Tensor Tensor::grad() const { return impl_ && impl_->grad ? Tensor(impl_->grad) : Tensor(); }
void Tensor::set_grad(const Tensor& g) const { impl_->grad = g.defined() ? g.impl_ptr() : nullptr; }
void Tensor::zero_grad() const { impl_->grad = nullptr; }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  if (!requires_grad())
    throw Error("backward() on " + describe() + " which does not require grad: no input of the ops that made it "
                "has requires_grad set (or it was computed under gdrt::NoGrad)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    if (numel() != 1)
      throw Error("backward() without a gradient needs a one-element tensor (a loss), got shape " +
                  shape_str(shape()) + "; pass a gradient of the same shape");
    seed = ones(shape(), TensorOptions{}.with_dtype(dtype()).with_device(device()));
  } else if (seed.shape() != shape()) {
    throw Error("backward(): gradient shape " + shape_str(seed.shape()) + " does not match the tensor's shape " +
                shape_str(shape()));
  }
  NoGrad no_grad;
  std::shared_ptr<Node> root = grad_edge(*this);
  // Topological order by iterative DFS (post-order, then reversed).
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, std::size_t>> stack{{root.get(), 0}};
  seen.insert(root.get());
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i < node->next.size()) {
      Node* child = node->next[i++].get();
      if (child && seen.insert(child).second) stack.emplace_back(child, 0);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::unordered_map<Node*, Tensor> grads;
  grads[root.get()] = seed;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = grads.find(node);
    if (found == grads.end()) continue;
    Tensor g = found->second;
    grads.erase(found);
    if (node->released())
      throw Error("backward through `" + node->name() + "` a second time: its saved tensors were freed by the "
                  "first backward. Pass retain_graph=true to the first backward() if you need to go through the "
                  "graph twice, or recompute the forward pass.");
    std::vector<Tensor> outs = node->apply(g);
    if (!retain_graph) node->release();
    for (std::size_t i = 0; i < node->next.size() && i < outs.size(); ++i) {
      Node* child = node->next[i].get();
      if (!child || !outs[i].defined()) continue;
      auto [slot, inserted] = grads.try_emplace(child, outs[i]);
      if (!inserted) slot->second = add(slot->second, outs[i]);
    }
  }
}

}  // namespace gdrt
