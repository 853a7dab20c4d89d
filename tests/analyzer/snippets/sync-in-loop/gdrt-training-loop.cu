// gdrt: synchronize(device) and Stream::synchronize() wait for the device as
// cudaDeviceSynchronize and cudaStreamSynchronize do; in a loop that runs
// gdrt ops every iteration they drain the queue each step.
// (The declarations mirror runtime/include/gdrt so the snippet stands alone.)
#include <optional>

namespace gdrt {
struct Device {
  int index = 0;
};
class Tensor {
 public:
  void backward() const;
  template <class T> T to_vector() const;
};
Tensor mse_loss(const Tensor& a, const Tensor& b);
class Stream {
 public:
  explicit Stream(Device device = {});
  void synchronize() const;
};
class Event {
 public:
  void synchronize() const;
};
void synchronize(Device device);
namespace nn {
class Module {
 public:
  Tensor operator()(const Tensor& x);
};
}  // namespace nn
namespace optim {
class Adam {
 public:
  void step();
  void zero_grad();
};
}  // namespace optim
}  // namespace gdrt

struct Batch {
  gdrt::Tensor input, target;
};
std::optional<Batch> next_batch();

void train_timed(gdrt::nn::Module& model, gdrt::optim::Adam& adam, gdrt::Device device) {
  while (auto b = next_batch()) {
    adam.zero_grad();
    gdrt::Tensor loss = gdrt::mse_loss(model(b->input), b->target);
    gdrt::synchronize(device);  // CHECK: GD010
    loss.backward();
    gdrt::Stream(device).synchronize();  // CHECK: GD010
    adam.step();
  }
}

void train_fixed(gdrt::nn::Module& model, gdrt::optim::Adam& adam, gdrt::Device device, int steps) {
  for (int s = 0; s < steps; ++s) {
    auto b = next_batch();
    adam.zero_grad();
    gdrt::Tensor loss = gdrt::mse_loss(model(b->input), b->target);
    loss.backward();
    adam.step();
    if (s % 100 == 0) gdrt::synchronize(device);  // every N steps: the fix
  }
  gdrt::synchronize(device);  // after the loop
}

void wait_for_device(gdrt::Device device, int times) {
  for (int i = 0; i < times; ++i) gdrt::synchronize(device);  // no gdrt work in the loop
}
