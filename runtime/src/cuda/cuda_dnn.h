// Convolutions on cuDNN's legacy convolution API (libcudnn_cnn): descriptors,
// the algorithm of each direction and its workspace size are worked out once
// per geometry and cached, since a training step repeats the same few shapes.
// One cuDNN handle per device, bound to the launch's stream under a lock.
#pragma once

#include <cudnn.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "cuda/cuda_allocator.h"
#include "gdrt/kernel_op.h"

namespace gdrt::cuda {

class Convolutions {
 public:
  explicit Convolutions(CudaAllocator& allocator);
  ~Convolutions();
  Convolutions(const Convolutions&) = delete;
  Convolutions& operator=(const Convolutions&) = delete;

  void forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, StreamId id,
               cudaStream_t stream);
  void backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, StreamId id,
                     cudaStream_t stream);
  // dw and db may each be null.
  void backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db, StreamId id,
                       cudaStream_t stream);

 private:
  struct Plan;
  using Key = std::array<std::int64_t, 15>;
  Plan& plan_locked(const ConvGeometry& g);
  // Workspace from the caching allocator, in `stream`'s order: freed right
  // after the call is queued, it is reused only by later work on that stream.
  class Workspace;
  template <class Algo>
  struct Choices;
  // The algorithm to run and its workspace, allocated into `ws`.
  template <class Algo>
  std::pair<Algo, std::size_t> pick(Choices<Algo>& c, std::unique_ptr<Workspace>& ws, StreamId id);

  CudaAllocator& allocator_;
  std::mutex mutex_;
  cudnnHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace gdrt::cuda
