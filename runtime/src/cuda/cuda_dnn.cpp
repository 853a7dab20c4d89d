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

}  // namespace

// The algorithms cuDNN's heuristics rank usable for one direction, best
// first, each with its workspace size; `at` is the one in use.
template <class Algo>
struct Convolutions::Choices {
  std::vector<std::pair<Algo, std::size_t>> list;
  std::size_t at = 0;
};

// Keeps the usable entries of a perf list (best first), sizing each one's
// workspace with `size_of`.
template <class Algo, class Perf, class SizeOf>
static void fill_choices(std::vector<std::pair<Algo, std::size_t>>& list, const std::vector<Perf>& perfs, int returned,
                         const char* direction, SizeOf size_of) {
  for (int i = 0; i < returned; ++i) {
    const Perf& perf = perfs[static_cast<std::size_t>(i)];
    if (perf.status != CUDNN_STATUS_SUCCESS) continue;
    list.emplace_back(perf.algo, size_of(perf.algo));
  }
  if (list.empty())
    throw Error(std::string("cuDNN has no usable ") + direction + " convolution algorithm for this geometry");
}

struct Convolutions::Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Choices<cudnnConvolutionFwdAlgo_t> fwd;
  Choices<cudnnConvolutionBwdDataAlgo_t> bwd_data;
  Choices<cudnnConvolutionBwdFilterAlgo_t> bwd_filter;
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

template <class Algo>
std::pair<Algo, std::size_t> Convolutions::pick(Choices<Algo>& c, std::unique_ptr<Workspace>& ws, StreamId id) {
  for (;;) {
    const auto [algo, bytes] = c.list[c.at];
    try {
      ws = std::make_unique<Workspace>(allocator_, bytes, id);
      return {algo, bytes};
    } catch (const Error& e) {
      // No room for this algorithm's workspace, even after the cache was
      // freed: the next one needing less, as PyTorch falls back; remembered.
      if (e.rule() != "GD008") throw;
      std::size_t next = c.at + 1;
      while (next < c.list.size() && c.list[next].second >= bytes) ++next;
      if (next == c.list.size()) throw;
      c.at = next;
    }
  }
}

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
  if (p.fwd.list.empty()) {
    int count = 0, returned = 0;
    GDRT_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<std::size_t>(count));
    GDRT_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x, p.w, p.conv, p.y, count, &returned,
                                                           perfs.data()));
    fill_choices(p.fwd.list, perfs, returned, "forward", [&](cudnnConvolutionFwdAlgo_t algo) {
      std::size_t bytes = 0;
      GDRT_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x, p.w, p.conv, p.y, algo, &bytes));
      return bytes;
    });
  }
  std::unique_ptr<Workspace> ws;
  const auto [algo, bytes] = pick(p.fwd, ws, id);
  const float one = 1.0f, zero_f = 0.0f;
  GDRT_CUDA_CHECK(cudnnConvolutionForward(handle_, &one, p.x, x, p.w, w, p.conv, algo, ws->get(), bytes, &zero_f,
                                          p.y, y));
  if (bias) GDRT_CUDA_CHECK(cudnnAddTensor(handle_, &one, p.bias, bias, &one, p.y, y));
}

void Convolutions::backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, StreamId id,
                                 cudaStream_t stream) {
  if (empty_geometry(g)) return zero(dx, ops::conv_input_bytes(g), stream);
  std::lock_guard lock(mutex_);
  Plan& p = plan_locked(g);
  GDRT_CUDA_CHECK(cudnnSetStream(handle_, stream));
  if (p.bwd_data.list.empty()) {
    int count = 0, returned = 0;
    GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<std::size_t>(count));
    GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.w, p.y, p.conv, p.x, count, &returned,
                                                                perfs.data()));
    fill_choices(p.bwd_data.list, perfs, returned, "backward-data", [&](cudnnConvolutionBwdDataAlgo_t algo) {
      std::size_t bytes = 0;
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, p.w, p.y, p.conv, p.x, algo, &bytes));
      return bytes;
    });
  }
  std::unique_ptr<Workspace> ws;
  const auto [algo, bytes] = pick(p.bwd_data, ws, id);
  const float one = 1.0f, zero_f = 0.0f;
  GDRT_CUDA_CHECK(cudnnConvolutionBackwardData(handle_, &one, p.w, w, p.y, dy, p.conv, algo, ws->get(), bytes,
                                               &zero_f, p.x, dx));
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
    if (p.bwd_filter.list.empty()) {
      int count = 0, returned = 0;
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle_, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<std::size_t>(count));
      GDRT_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, p.x, p.y, p.conv, p.w, count,
                                                                    &returned, perfs.data()));
      fill_choices(p.bwd_filter.list, perfs, returned, "backward-filter", [&](cudnnConvolutionBwdFilterAlgo_t algo) {
        std::size_t bytes = 0;
        GDRT_CUDA_CHECK(
            cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, p.x, p.y, p.conv, p.w, algo, &bytes));
        return bytes;
      });
    }
    std::unique_ptr<Workspace> ws;
    const auto [algo, bytes] = pick(p.bwd_filter, ws, id);
    GDRT_CUDA_CHECK(cudnnConvolutionBackwardFilter(handle_, &one, p.x, x, p.y, dy, p.conv, algo, ws->get(), bytes,
                                                   &zero_f, p.w, dw));
  }
  if (db) GDRT_CUDA_CHECK(cudnnConvolutionBackwardBias(handle_, &one, p.y, dy, &zero_f, p.bias, db));
}

}  // namespace gdrt::cuda
