// While a trace is being recorded, every kernel call goes through this
// decorator, which records one KernelEvent (name, device, start, end) and
// forwards to the backend's real kernels. It is the single place kernel
// launches are hooked; kernels_for() picks it only when recording.
#include "core/hooks.h"
#include "core/impl.h"

namespace gdrt {
namespace {

class TracedKernels final : public Kernels {
 public:
  TracedKernels(Kernels& inner, Device device) : k_(inner), device_(device) {}

  void fill(const TensorView& out, double value) override { run("gdrt::fill", [&] { k_.fill(out, value); }); }
  void copy(const TensorView& out, const TensorView& in) override { run("gdrt::copy", [&] { k_.copy(out, in); }); }
  void unary(UnaryOp op, const TensorView& out, const TensorView& in, double alpha) override {
    run("gdrt::unary", [&] { k_.unary(op, out, in, alpha); });
  }
  void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b) override {
    run("gdrt::binary", [&] { k_.binary(op, out, a, b); });
  }
  void reduce(ReduceOp op, const TensorView& out, const TensorView& in) override {
    run("gdrt::reduce", [&] { k_.reduce(op, out, in); });
  }
  void random(const TensorView& out, Distribution dist, std::uint64_t seed, std::uint64_t offset, double a,
              double b) override {
    run("gdrt::random", [&] { k_.random(out, dist, seed, offset, a, b); });
  }
  void matmul(DType dtype, bool ta, bool tb, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
              const void* a, const void* b, void* c, double beta) override {
    run("gdrt::matmul", [&] { k_.matmul(dtype, ta, tb, batch, m, n, k, a, b, c, beta); });
  }
  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) override {
    run("gdrt::conv2d_forward", [&] { k_.conv2d_forward(g, x, w, bias, y); });
  }
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx) override {
    run("gdrt::conv2d_backward_data", [&] { k_.conv2d_backward_data(g, dy, w, dx); });
  }
  void conv2d_backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db) override {
    run("gdrt::conv2d_backward_weight", [&] { k_.conv2d_backward_weight(g, x, dy, dw, db); });
  }
  void conv2d_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dx, float* dw,
                       float* db) override {
    run("gdrt::conv2d_backward", [&] { k_.conv2d_backward(g, x, dy, w, dx, dw, db); });
  }
  void max_pool2d_forward(const PoolGeometry& g, const float* x, float* y, std::int32_t* argmax) override {
    run("gdrt::max_pool2d_forward", [&] { k_.max_pool2d_forward(g, x, y, argmax); });
  }
  void max_pool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax, float* dx) override {
    run("gdrt::max_pool2d_backward", [&] { k_.max_pool2d_backward(g, dy, argmax, dx); });
  }
  void batch_norm_train(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w, const float* b,
                        float* rm, float* rv, double momentum, double eps, float* y, float* mean, float* invstd,
                        bool relu) override {
    run("gdrt::batch_norm_train",
        [&] { k_.batch_norm_train(n, c, hw, x, w, b, rm, rv, momentum, eps, y, mean, invstd, relu); });
  }
  void batch_norm_eval(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* w, const float* b,
                       const float* rm, const float* rv, double eps, float* y, bool relu) override {
    run("gdrt::batch_norm_eval", [&] { k_.batch_norm_eval(n, c, hw, x, w, b, rm, rv, eps, y, relu); });
  }
  void batch_norm_backward(std::int64_t n, std::int64_t c, std::int64_t hw, const float* x, const float* dy,
                           const float* w, const float* mean, const float* invstd, bool training, const float* relu_out,
                           float* dx, float* dw, float* db) override {
    run("gdrt::batch_norm_backward",
        [&] { k_.batch_norm_backward(n, c, hw, x, dy, w, mean, invstd, training, relu_out, dx, dw, db); });
  }
  void relu_backward(std::int64_t n, const float* y, const float* dy, float* dx) override {
    run("gdrt::relu_backward", [&] { k_.relu_backward(n, y, dy, dx); });
  }
  void adam_update(std::int64_t n, float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                   const AdamUpdate& u) override {
    run("gdrt::adam_update", [&] { k_.adam_update(n, param, grad, exp_avg, exp_avg_sq, u); });
  }

 private:
  template <class F>
  void run(const char* name, F&& f) {
    const auto start = hooks::now_ns();
    f();
    hooks::kernel(device_, name, start, hooks::now_ns());
  }
  Kernels& k_;
  Device device_;
};

}  // namespace

Kernels& traced_kernels(Kernels& inner, const Device& device) {
  // One decorator per thread, kernels and device (backends may share kernels).
  thread_local std::vector<std::pair<std::pair<Kernels*, Device>, std::unique_ptr<TracedKernels>>> made;
  for (auto& [key, k] : made)
    if (key.first == &inner && key.second == device) return *k;
  made.emplace_back(std::make_pair(&inner, device), std::make_unique<TracedKernels>(inner, device));
  return *made.back().second;
}

}  // namespace gdrt
