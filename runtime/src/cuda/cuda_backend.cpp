// The cuda backend (cuda_backend.h) and its registration. Every entry point
// first makes the backend's device current: callers may be any thread.
#include "cuda/cuda_backend.h"

#include <string>

#include "core/hooks.h"
#include "core/registration.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "gdrt/error.h"

namespace gdrt {
namespace cuda {
namespace {

// cudaGetDeviceCount, with its error cleared so that the next call does not
// report it (no driver, no device).
cudaError_t count_devices(int& count) {
  count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) (void)cudaGetLastError();
  return status;
}

}  // namespace

CudaBackend::CudaBackend(int index) : index_(index) {
  int count = 0;
  if (const cudaError_t status = count_devices(count); status != cudaSuccess) {
    throw Error("cuda:" + std::to_string(index) + " is not available: cudaGetDeviceCount failed: " +
                cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
  if (index < 0 || index >= count)
    throw Error("cuda:" + std::to_string(index) + " is not available: this machine has " + std::to_string(count) +
                " CUDA device" + (count == 1 ? "" : "s"));
  use_device(index_);
  GDRT_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, index_));
  GDRT_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, index_));
  allocator_ = std::make_unique<CudaAllocator>(device(), [this](StreamId s) { return streams_.get(s); });
  timer_ = std::make_unique<KernelTimer>(device());
}

CudaBackend::~CudaBackend() {
  // Torn down only explicitly (the registry keeps backends for the process's
  // life); queued work that still uses the libraries' handles must finish.
  (void)cudaSetDevice(index_);
  (void)cudaDeviceSynchronize();
}

Blas& CudaBackend::blas() {
  std::lock_guard lock(libraries_mutex_);
  if (!blas_) blas_ = std::make_unique<Blas>(*allocator_, cc_major_);
  return *blas_;
}

Convolutions& CudaBackend::convolutions() {
  std::lock_guard lock(libraries_mutex_);
  if (!convolutions_) convolutions_ = std::make_unique<Convolutions>(*allocator_);
  return *convolutions_;
}

void* CudaBackend::allocate(std::size_t bytes, StreamId stream) {
  use_device(index_);
  return allocator_->allocate(bytes, stream);
}

void CudaBackend::deallocate(void* ptr, std::size_t, StreamId stream, const std::vector<StreamId>& used_on) {
  use_device(index_);
  allocator_->deallocate(ptr, stream, used_on);
}

void* CudaBackend::allocate_pinned(std::size_t bytes) {
  use_device(index_);
  return allocator_->allocate_pinned(bytes);
}

void CudaBackend::deallocate_pinned(void* ptr, std::size_t) {
  use_device(index_);
  allocator_->deallocate_pinned(ptr);
}

void CudaBackend::copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind, std::size_t bytes,
                       StreamId stream, std::uint64_t trace_id) {
  if (bytes == 0) return;
  use_device(index_);
  const cudaStream_t s = streams_.get(stream);
  const auto start = trace_id ? hooks::now_ns() : 0;
  // cudaMemcpyDefault infers the direction from the pointers (unified
  // addressing) and already has backend.h's semantics: asynchronous between
  // device and pinned memory, host-synchronous with pageable memory.
  GDRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // A copy with pageable memory is done when the call returns; an
  // asynchronous one is recorded as queued (its end is not timed here).
  const bool pageable = dst_kind == MemoryKind::host_pageable || src_kind == MemoryKind::host_pageable;
  if (trace_id)
    hooks::copy_ran(device(), trace_id, dst, dst_kind, src, src_kind, bytes, start, pageable ? hooks::now_ns() : 0,
                    stream);
  if (dst_kind == MemoryKind::host_pinned) allocator_->pinned_used(dst, s);
  if (src_kind == MemoryKind::host_pinned) allocator_->pinned_used(src, s);
}

void CudaBackend::launch(const KernelOp& op, StreamId stream, std::uint64_t launch_id) {
  use_device(index_);
  const cudaStream_t s = streams_.get(stream);
  if (!hooks::recording(device())) return run(op, stream, s);
  auto started = timer_->begin(s);
  try {
    run(op, stream, s);
  } catch (...) {
    timer_->abandon(std::move(started));
    throw;
  }
  timer_->end(std::move(started), s, kernel_name(op), stream, launch_id);
}

namespace {

// Scratch from the caching allocator on the launch's stream.
class StreamScratch final : public Scratch {
 public:
  StreamScratch(CudaAllocator& allocator, StreamId stream) : allocator_(allocator), stream_(stream) {}
  ~StreamScratch() override {
    for (void* p : blocks_) allocator_.deallocate(p, stream_, {});
  }
  void* get(std::size_t bytes) override {
    blocks_.push_back(allocator_.allocate(bytes, stream_));
    return blocks_.back();
  }

 private:
  CudaAllocator& allocator_;
  StreamId stream_;
  std::vector<void*> blocks_;
};

}  // namespace

void CudaBackend::run(const KernelOp& op, StreamId id, cudaStream_t stream) {
  StreamScratch scratch(*allocator_, id);
  const LaunchContext ctx{stream, sm_count_, &scratch};
  std::visit(Overloaded{
                 [&](const ops::Fill& o) { cuda::fill(ctx, o.out, o.value); },
                 [&](const ops::Copy& o) { cuda::copy(ctx, o.out, o.in); },
                 [&](const ops::Unary& o) { cuda::unary(ctx, o.op, o.out, o.in, o.alpha); },
                 [&](const ops::Binary& o) { cuda::binary(ctx, o.op, o.out, o.a, o.b); },
                 [&](const ops::Reduce& o) { cuda::reduce(ctx, o.op, o.out, o.in); },
                 [&](const ops::Random& o) { cuda::random(ctx, o); },
                 [&](const ops::Matmul& o) { blas().matmul(o, id, stream); },
                 [&](const ops::Conv2dForward& o) { convolutions().forward(o.g, o.x, o.w, o.bias, o.y, id, stream); },
                 [&](const ops::Conv2dBackwardData& o) {
                   convolutions().backward_data(o.g, o.dy, o.w, o.dx, id, stream);
                 },
                 [&](const ops::Conv2dBackwardWeight& o) {
                   convolutions().backward_weight(o.g, o.x, o.dy, o.dw, o.db, id, stream);
                 },
                 [&](const ops::Conv2dBackward& o) {
                   if (o.dx) convolutions().backward_data(o.g, o.dy, o.w, o.dx, id, stream);
                   if (o.dw || o.db) convolutions().backward_weight(o.g, o.x, o.dy, o.dw, o.db, id, stream);
                 },
                 [&](const ops::MaxPool2dForward& o) { cuda::max_pool2d_forward(ctx, o); },
                 [&](const ops::MaxPool2dBackward& o) { cuda::max_pool2d_backward(ctx, o); },
                 [&](const ops::BatchNormTrain& o) { cuda::batch_norm_train(ctx, o); },
                 [&](const ops::BatchNormEval& o) { cuda::batch_norm_eval(ctx, o); },
                 [&](const ops::BatchNormBackward& o) { cuda::batch_norm_backward(ctx, o); },
                 [&](const ops::ReluBackward& o) { cuda::relu_backward(ctx, o); },
                 [&](const ops::AdamStep& o) { cuda::adam_step(ctx, o); },
             },
             op);
}

StreamId CudaBackend::create_stream(StreamFlags flags) {
  use_device(index_);
  return streams_.create(flags);
}

void CudaBackend::destroy_stream(StreamId stream) {
  use_device(index_);
  const cudaStream_t s = streams_.get(stream);
  {
    std::lock_guard lock(libraries_mutex_);
    if (blas_) blas_->stream_destroyed(stream);
  }
  // The allocator takes the stream's last event first: blocks it cached for
  // the stream serve other streams once that work is done.
  allocator_->stream_destroyed(stream, s);
  streams_.remove(stream);
  GDRT_CUDA_CHECK(cudaStreamDestroy(s));
}

EventId CudaBackend::record_event(StreamId stream) {
  use_device(index_);
  return streams_.record(stream);
}

void CudaBackend::destroy_event(EventId event) {
  use_device(index_);
  GDRT_CUDA_CHECK(cudaEventDestroy(streams_.remove_event(event)));
}

void CudaBackend::wait_event(StreamId stream, EventId event) {
  use_device(index_);
  GDRT_CUDA_CHECK(cudaStreamWaitEvent(streams_.get(stream), streams_.event(event), 0));
}

void CudaBackend::synchronize_event(EventId event) {
  use_device(index_);
  GDRT_CUDA_CHECK(cudaEventSynchronize(streams_.event(event)));
  timer_->flush();
}

void CudaBackend::synchronize(StreamId stream) {
  use_device(index_);
  GDRT_CUDA_CHECK(cudaStreamSynchronize(streams_.get(stream)));
  timer_->flush();
}

void CudaBackend::synchronize_device() {
  use_device(index_);
  GDRT_CUDA_CHECK(cudaDeviceSynchronize());
  timer_->flush();
}

}  // namespace cuda

BackendRegistration cuda_backend_registration() {
  return {DeviceKind::cuda,
          [](int index) -> std::unique_ptr<Backend> { return std::make_unique<cuda::CudaBackend>(index); },
          [] {
            int count = 0;
            return cuda::count_devices(count) == cudaSuccess ? count : 0;
          }};
}

}  // namespace gdrt
