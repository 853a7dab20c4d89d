// The fixed twins of kernel-writers.cu: each read comes after a wait that
// covers the launch's stream.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

__global__ void signal(volatile int* flag) { *flag = 1; }

float* managed_buffer(int n) {
  float* buffer = nullptr;
  CHECK(cudaMallocManaged(&buffer, n * sizeof(float)));
  return buffer;
}

float* pinned_buffer(int n) {
  float* buffer = nullptr;
  CHECK(cudaMallocHost(&buffer, n * sizeof(float)));
  return buffer;
}

float device_sync(int n) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// cudaDeviceSynchronize waits for non-blocking streams too.
float device_sync_covers_nonblocking_launch(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const float first = result[0];
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

float stream_sync_of_the_launch_stream(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// The legacy default stream waits for a blocking stream.
float legacy_sync_covers_blocking_launch(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// So does a blocking cudaMemcpy, which runs on it.
float blocking_copy_covers_blocking_launch(const float* device, int n, cudaStream_t stream) {
  float* result = pinned_buffer(n);
  float scale = 0.0f;
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&scale, device, sizeof(float), cudaMemcpyDeviceToHost));
  const float first = scale * result[0];
  CHECK(cudaFreeHost(result));
  return first;
}

// An event recorded after the launch, on its stream.
float event_recorded_after_launch(int n, cudaStream_t stream) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = pinned_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, stream));
  CHECK(cudaEventSynchronize(done));
  const float first = result[0];
  CHECK(cudaFreeHost(result));
  return first;
}

// The other stream waits for the launch's event; a sync of it covers the launch.
float other_stream_waits_for_the_launch(int n, cudaStream_t compute, cudaStream_t copies) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, compute>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, compute));
  CHECK(cudaStreamWaitEvent(copies, done, 0));
  CHECK(cudaStreamSynchronize(copies));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// One launch per device's stream, then a sync of each in a loop over the
// same devices.
float launch_loop_then_sync_loop(int n, const int* devices, cudaStream_t* streams, int count) {
  float* result = managed_buffer(n);
  int d = 0;
  while (d < count) {
    CHECK(cudaSetDevice(devices[d]));
    fill<<<(n + 255) / 256, 256, 0, streams[d++]>>>(result, n);
    CHECK(cudaGetLastError());
  }
  d = 0;
  while (d < count) {
    CHECK(cudaSetDevice(devices[d]));
    CHECK(cudaStreamSynchronize(streams[d++]));
  }
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// The polling loop leaves only once the stream is done.
float polls_until_done(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  while (cudaStreamQuery(stream) == cudaErrorNotReady) std::this_thread::yield();
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Polls an event with a spin budget, then waits for it if the budget ran out.
float polls_then_waits(int n, cudaStream_t stream) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, stream));
  int spins = 0;
  cudaError_t status;
  do {
    status = cudaEventQuery(done);
  } while (status == cudaErrorNotReady && ++spins < 1000);
  if (status != cudaSuccess) CHECK(cudaEventSynchronize(done));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Read only on the branch where the query said the launch is done.
float reads_when_done(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  float first = 0.0f;
  if (cudaStreamQuery(stream) == cudaSuccess) first = result[0];
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(result));
  return first;
}

// CHECK aborts unless the query says done.
float checked_query(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamQuery(stream));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// Mapped memory read after a device sync.
float mapped_after_sync(int n) {
  float* host = nullptr;
  CHECK(cudaHostAlloc(&host, n * sizeof(float), cudaHostAllocMapped));
  float* device = nullptr;
  CHECK(cudaHostGetDevicePointer(&device, host, 0));
  fill<<<(n + 255) / 256, 256>>>(device, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const float first = host[0];
  CHECK(cudaFreeHost(host));
  return first;
}

// Handing the memory on is no read: the next kernel (queued after the first
// on the same stream), an address into it, a helper that only launches.
void launch_fill(float* out, int n, cudaStream_t stream) {
  fill<<<(n + 255) / 256, 256, 0, stream>>>(out, n);
  CHECK(cudaGetLastError());
}

float handed_on_before_the_sync(int n, cudaStream_t stream) {
  float* result = managed_buffer(2 * n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  fill<<<(n + 255) / 256, 256, 0, stream>>>(&result[n], n);
  CHECK(cudaGetLastError());
  launch_fill(result, n, stream);
  CHECK(cudaStreamSynchronize(stream));
  const float first = result[0];
  CHECK(cudaFree(result));
  return first;
}

// cudaLaunchKernelEx on the stream its configuration names, and a sync of
// that stream.
float launch_kernel_ex(int n) {
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* result = managed_buffer(n);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((n + 255) / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  CHECK(cudaLaunchKernelEx(&config, fill, result, n));
  CHECK(cudaStreamSynchronize(stream));
  const float first = result[0];
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// The C form on the default stream (the config's zero), and a device sync.
float launch_kernel_ex_c(int n) {
  float* result = pinned_buffer(n);
  void* args[] = {&result, &n};
  cudaLaunchConfig_t config = {dim3((n + 255) / 256), dim3(256)};
  CHECK(cudaLaunchKernelExC(&config, (const void*)fill, args));
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];
  CHECK(cudaFreeHost(result));
  return first;
}

// A volatile flag the host polls while the kernel runs: the host means to
// read it before the launch is done.
void waits_for_a_flag(cudaStream_t stream) {
  int* flag = nullptr;
  CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  signal<<<1, 1, 0, stream>>>(flag);
  CHECK(cudaGetLastError());
  while (*(volatile int*)flag == 0) std::this_thread::yield();
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(flag));
}
