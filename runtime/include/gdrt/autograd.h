// Autograd graph nodes. Each differentiable op attaches a Node to its output;
// the node maps the output's gradient to one gradient per input.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gdrt/tensor.h"

namespace gdrt {

class Node {
 public:
  virtual ~Node() = default;
  // One entry per input; an undefined Tensor means "no gradient".
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release() { released_ = true; }
  const std::string& name() const { return name_; }
  bool released() const { return released_; }
  // Next nodes, one per input (null when that input needs no gradient).
  std::vector<std::shared_ptr<Node>> next;

 protected:
  explicit Node(std::string name) : name_(std::move(name)) {}
  bool released_ = false;

 private:
  std::string name_;
};

// The common case: a closure over the tensors the backward needs.
class FunctionNode final : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(const Tensor&)>;
  FunctionNode(std::string name, Backward backward) : Node(std::move(name)), backward_(std::move(backward)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  void release() override;

 private:
  Backward backward_;
};

// True if grad mode is on and any input requires grad.
bool any_requires_grad(const std::vector<const Tensor*>& inputs);
// Makes `output` the result of `name` over `inputs`, differentiated by
// `backward` (returns one gradient per input). No-op if no input needs grad.
void attach_grad_fn(Tensor& output, const std::string& name, const std::vector<const Tensor*>& inputs,
                    FunctionNode::Backward backward);
// Marks `output` as produced by an op without a gradient: a backward that
// reaches it fails with an error naming the op.
void attach_non_differentiable(Tensor& output, const std::string& name, const std::vector<const Tensor*>& inputs);

}  // namespace gdrt
