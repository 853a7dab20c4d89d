// cuDNN convolutions (cuda_dnn.h). Float32 math is FMA-only: TF32 tensor
// cores would round inputs to 10 mantissa bits and miss the cpu reference by
// far more than float rounding (PyTorch's allow_tf32=False path does the same).
#include "cuda/cuda_dnn.h"

#include <climits>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "gdrt/error.h"

namespace gdrt::cuda {
namespace {

int narrow(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) throw Error(std::string("cuda conv2d: ") + what + " " + std::to_string(v) +
                                        " does not fit cuDNN's int dimensions");
  return static_cast<int>(v);
}

// The first algorithm cuDNN's heuristics rank that can run here; perf lists
// come best-first.
template <class Perf>
Perf first_usable(const std::vector<Perf>& perfs, int returned, const char* direction) {
  for (int i = 0; i < returned; ++i)
    if (perfs[static_cast<std::size_t>(i)].status == CUDNN_STATUS_SUCCESS) return perfs[static_cast<std::size_t>(i)];
  throw Error(std::string("cuDNN has no usable ") + direction + " convolution algorithm for this geometry");
}

}  // namespace

struct Convolutions::Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool have_fwd = false, have_bwd_data = false, have_bwd_filter = false;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  std::size_t fwd_ws = 0, bwd_data_ws = 0, bwd_filter_ws = 0;
  ~Plan() {
    if (x) (void)cudnnDestroyTensorDescriptor(x);
    if (y) (void)cudnnDestroyTensorDescriptor(y);
    if (bias) (void)cudnnDestroyTensorDescriptor(bias);
    if (w) (void)cudnnDestroyFilterDescriptor(w);
    if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
  }
};

class Convolutions::Workspace {
 public:
  Workspace(CudaAllocator& a, std::size_t bytes, StreamId stream) : a_(a), stream_(stream) {
    if (bytes) p_ = a_.allocate(bytes, stream);
  }
  ~Workspace() {
    if (p_) a_.deallocate(p_, stream_, {});
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return p_; }

 private:
  CudaAllocator& a_;
  StreamId stream_;
  void* p_ = nullptr;
};

Convolutions::Convolutions(CudaAllocator& allocator) : allocator_(allocator) {
  GDRT_CUDA_CHECK(cudnnCreate(&handle_));
}

Convolutions::~Convolutions() {
  plans_.clear();
  if (handle_) (void)cudnnDestroy(handle_);
}

Convolutions::Plan& Convolutions::plan_locked(const ConvGeometry& g) {
  const Key key{g.batch,    g.in_channels, g.in_h,  g.in_w,  g.out_channels, g.kernel_h,   g.kernel_w, g.stride_h,
                g.stride_w, g.pad_h,       g.pad_w, g.dilation_h, g.dilation_w, g.out_h, g.out_w};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  GDRT_CUDA_CHECK(cudnnCreateTensorDescriptor(&p->x));
  GDRT_CUDA_CHECK(cudnnCreateTensorDescriptor(&p->y));
  GDRT_CUDA_CHECK(cudnnCreateTensorDescriptor(&p->bias));
  GDRT_CUDA_CHECK(cudnnCreateFilterDescriptor(&p->w));
  GDRT_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
  GDRT_CUDA_CHECK(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, narrow(g.batch, "batch"),
                                             narrow(g.in_channels, "in_channels"), narrow(g.in_h, "in_h"),
                                             narrow(g.in_w, "in_w")));
  GDRT_CUDA_CHECK(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, narrow(g.batch, "batch"),
                                             narrow(g.out_channels, "out_channels"), narrow(g.out_h, "out_h"),
                                             narrow(g.out_w, "out_w")));
  GDRT_CUDA_CHECK(cudnnSetTensor4dDescriptor(p->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                             narrow(g.out_channels, "out_channels"), 1, 1));
  GDRT_CUDA_CHECK(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                             narrow(g.out_channels, "out_channels"),
                                             narrow(g.in_channels, "in_channels"), narrow(g.kernel_h, "kernel_h"),
                                             narrow(g.kernel_w, "kernel_w")));
  GDRT_CUDA_CHECK(cudnnSetConvolution2dDescriptor(p->conv, narrow(g.pad_h, "pad_h"), narrow(g.pad_w, "pad_w"),
                                                  narrow(g.stride_h, "stride_h"), narrow(g.stride_w, "stride_w"),
                                                  narrow(g.dilation_h, "dilation_h"),
                                                  narrow(g.dilation_w, "dilation_w"), CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT));
  GDRT_CUDA_CHECK(cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH));
  // cuDNN's own idea of the output must be ours, or the buffers are the wrong size.
  int n = 0, c = 0, h = 0, w = 0;
  GDRT_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &n, &c, &h, &w));
  if (n != g.batch || c != g.out_channels || h != g.out_h || w != g.out_w)
    throw Error("cuda conv2d: output " + std::to_string(g.out_h) + "x" + std::to_string(g.out_w) +
                " does not match cuDNN's " + std::to_string(h) + "x" + std::to_string(w) + " for this geometry");
  return *plans_.emplace(key, std::move(p)).first->second;
}

namespace {

// Zero-sized geometries cuDNN refuses: the outputs are sums over nothing.
bool empty_geometry(const ConvGeometry& g) {
  return g.batch == 0 || g.in_channels == 0 || g.out_channels == 0 || g.in_h == 0 || g.in_w == 0 || g.out_h == 0 ||
         g.out_w == 0;
}

void zero(void* p, std::size_t bytes, cudaStream_t stream) {
  if (p && bytes) GDRT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
}

}  // namespace

void Convolutions::forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                           StreamId id, cudaStream_t stream) {
  if (empty_geometry(g)) return zero(y, ops::conv_output_bytes(g), stream);
  std::lock_guard lock(mutex_);
  Plan& p = plan_locked(g);
  GDRT_CUDA_CHECK(cudnnSetStream(handle_, stream));
  if (!p.have_fwd) {
    int count = 0, returned = 0;
    GDRT_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<std::size_t>(count));
    GDRT_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x, p.w, p.conv, p.y, count, &returned,
                                                           perfs.data()));
    p.fwd = first_usable(perfs, returned, "forward").algo;
    GDRT_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x, p.w, p.conv, p.y, p.fwd, &p.fwd_ws));
    p.have_fwd = true;
  }
  Workspace ws(allocator_, p.fwd_ws, id);
  const float one = 1.0f, zero_f = 0.0f;
  GDRT_CUDA_CHECK(cudnnConvolutionForward(handle_, &one, p.x, x, p.w, w, p.conv, p.fwd, ws.get(), p.fwd_ws, &zero_f,
                                          p.y, y));
  if (bias) GDRT_CUDA_CHECK(cudnnAddTensor(handle_, &one, p.bias, bias, &one, p.y, y));
}

void Convolutions::backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, StreamId id,
                                 cudaStream_t stream) {
  if (empty_geometry(g)) return zero(dx, ops::conv_input_bytes(g), stream);
  std::lock_guard lock(mutex_);
  Plan& p = plan_locked(g);
  GDRT_CUDA_CHECK(cudnnSetStream(handle_, stream));
  if (!p.have_bwd_data) {
    int count = 0, returned = 0;
    GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<std::size_t>(count));
    GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.w, p.y, p.conv, p.x, count, &returned,
                                                                perfs.data()));
    p.bwd_data = first_usable(perfs, returned, "backward-data").algo;
    GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, p.w, p.y, p.conv, p.x, p.bwd_data,
                                                                 &p.bwd_data_ws));
    p.have_bwd_data = true;
  }
  Workspace ws(allocator_, p.bwd_data_ws, id);
  const float one = 1.0f, zero_f = 0.0f;
  GDRT_CUDA_CHECK(cudnnConvolutionBackwardData(handle_, &one, p.w, w, p.y, dy, p.conv, p.bwd_data, ws.get(),
                                               p.bwd_data_ws, &zero_f, p.x, dx));
}

void Convolutions::backward_weight(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* db,
                                   StreamId id, cudaStream_t stream) {
  if (empty_geometry(g)) {
    zero(dw, ops::conv_weight_bytes(g), stream);
    zero(db, ops::float_bytes(g.out_channels), stream);
    return;
  }
  std::lock_guard lock(mutex_);
  Plan& p = plan_locked(g);
  GDRT_CUDA_CHECK(cudnnSetStream(handle_, stream));
  const float one = 1.0f, zero_f = 0.0f;
  if (dw) {
    if (!p.have_bwd_filter) {
      int count = 0, returned = 0;
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle_, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<std::size_t>(count));
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, p.x, p.y, p.conv, p.w, count,
                                                                    &returned, perfs.data()));
      p.bwd_filter = first_usable(perfs, returned, "backward-filter").algo;
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, p.x, p.y, p.conv, p.w, p.bwd_filter,
                                                                     &p.bwd_filter_ws));
      p.have_bwd_filter = true;
    }
    Workspace ws(allocator_, p.bwd_filter_ws, id);
    GDRT_CUDA_CHECK(cudnnConvolutionBackwardFilter(handle_, &one, p.x, x, p.y, dy, p.conv, p.bwd_filter, ws.get(),
                                                   p.bwd_filter_ws, &zero_f, p.w, dw));
  }
  if (db) GDRT_CUDA_CHECK(cudnnConvolutionBackwardBias(handle_, &one, p.y, dy, &zero_f, p.bias, db));
}

}  // namespace gdrt::cuda
