// The cuda backend's memory and streams on a real device: the caching
// allocator's stream rules, asynchronous pinned copies, the out-of-memory
// report and the errors for unknown streams. Without a usable CUDA device
// every test skips, saying why.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cuda_test_support.h"

namespace gdrt {
namespace {

// Holds a stream at a host function until opened (or a deadline passes, so a
// broken test fails instead of hanging).
class Gate {
 public:
  ~Gate() { open(); }
  void block(cudaStream_t stream) {
    ASSERT_EQ(cudaLaunchHostFunc(stream, &Gate::wait, this), cudaSuccess);
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  bool timed_out() const { return timed_out_; }

 private:
  static void CUDART_CB wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    std::unique_lock lock(g->mutex_);
    if (!g->cv_.wait_for(lock, std::chrono::seconds(20), [&] { return g->open_; })) g->timed_out_ = true;
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  bool timed_out_ = false;
};

TEST_F(CudaBackend, AllocatorReusesOnItsStreamAndWaitsForRecordedStreams) {
  auto& b = *gpu_;
  const StreamId s1 = b.create_stream(StreamFlags::non_blocking), s2 = b.create_stream(StreamFlags::non_blocking);
  const std::size_t bytes = 3 * 4096 + 100;
  void* p = b.allocate(bytes, s1);
  b.deallocate(p, bytes, s1, {});
  void* other = b.allocate(bytes, s2);
  EXPECT_NE(other, p) << "a block freed on s1 went to s2";
  void* q = b.allocate(bytes, s1);
  EXPECT_EQ(q, p) << "a block freed on its own stream is reusable there at once";

  Gate gate;
  gate.block(cuda_backend().stream_handle(s2));
  b.deallocate(q, bytes, s1, {s2});  // s2 used it (record_stream) and is still busy
  void* r = b.allocate(bytes, s1);
  EXPECT_NE(r, q) << "reused before the recording stream's work completed";
  gate.open();
  b.synchronize(s2);
  void* t = b.allocate(bytes, s1);
  EXPECT_EQ(t, q) << "not reused after the recording stream's work completed";
  EXPECT_FALSE(gate.timed_out());
  b.deallocate(r, bytes, s1, {});
  b.deallocate(t, bytes, s1, {});
  b.deallocate(other, bytes, s2, {});
  b.synchronize_device();
  b.destroy_stream(s1);
  b.destroy_stream(s2);
}

TEST_F(CudaBackend, PinnedCopiesReturnBeforeTheyRun) {
  auto& b = *gpu_;
  const StreamId s = b.create_stream(StreamFlags::non_blocking);
  const std::size_t n = 1 << 20;
  auto* host = static_cast<float*>(b.allocate_pinned(n * sizeof(float)));
  auto* back = static_cast<float*>(b.allocate_pinned(n * sizeof(float)));
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  void* dev = b.allocate(n * sizeof(float), s);
  {
    Gate gate;
    gate.block(cuda_backend().stream_handle(s));
    b.copy(dev, MemoryKind::device, host, MemoryKind::host_pinned, n * sizeof(float), s, 0);
    b.copy(back, MemoryKind::host_pinned, dev, MemoryKind::device, n * sizeof(float), s, 0);
    // Both copies were queued behind the closed gate and returned.
    EXPECT_EQ(cudaStreamQuery(cuda_backend().stream_handle(s)), cudaErrorNotReady);
    (void)cudaGetLastError();  // not-ready is not an error; leave none behind
    gate.open();
    b.synchronize(s);
    EXPECT_FALSE(gate.timed_out());
  }
  EXPECT_EQ(back[12345], 12345.0f);
  EXPECT_EQ(back[n - 1], static_cast<float>(n - 1));
  b.deallocate(dev, n * sizeof(float), s, {});
  b.deallocate_pinned(host, n * sizeof(float));
  b.deallocate_pinned(back, n * sizeof(float));
  b.destroy_stream(s);
}

TEST_F(CudaBackend, OutOfMemoryIsGD008WithLiveAndCachedBytes) {
  void* keep = gpu_->allocate(8 << 20, 0);
  try {
    gpu_->allocate(std::size_t{1} << 50, 0);
    ADD_FAILURE() << "a petabyte allocation succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.rule(), "GD008");
    EXPECT_NE(msg.find("GD008 out-of-memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("8.00 MiB"), std::string::npos) << "the largest live allocation is listed: " << msg;
    EXPECT_NE(msg.find("cache held"), std::string::npos) << msg;
  }
  gpu_->deallocate(keep, 8 << 20, 0, {});
}

TEST_F(CudaBackend, UnknownStreamsAndTooManyDimensionsAreErrors) {
  EXPECT_THROW(gpu_->synchronize(987654321), Error);
  // Nine dimensions of size 2 whose strides never line up, so none merge.
  std::vector<std::int64_t> sizes(9, 2), strides(9, 1);
  for (std::size_t i = 1; i < 9; ++i) strides[i] = strides[i - 1] * 2 + 1;
  void* d = gpu_->allocate(1 << 20, 0);
  EXPECT_THROW(gpu_->launch(ops::Fill{TensorView{d, DType::f32, sizes, strides}, 1.0}, 0, 0), Error);
  gpu_->deallocate(d, 1 << 20, 0, {});
}

}  // namespace
}  // namespace gdrt
