// A kernel writes managed or pinned (zero-copy) memory and the host reads it
// before a synchronisation that covers the launch's stream: the same race
// as an asynchronous copy's, with the kernel as the writer.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void fill(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

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

// No synchronisation at all between the launch and the read.
float read_right_after_launch(int n) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256>>>(result, n);
  CHECK(cudaGetLastError());
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// cudaStreamSynchronize(0) waits for the legacy default stream, which a
// stream created with cudaStreamNonBlocking does not wait for.
float legacy_sync_misses_nonblocking_launch(int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// A blocking cudaMemcpy runs on the legacy default stream too.
float blocking_copy_misses_nonblocking_launch(const float* device, int n) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* result = pinned_buffer(n);
  float scale = 0.0f;
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&scale, device, sizeof(float), cudaMemcpyDeviceToHost));
  const float first = scale * result[0];  // CHECK: GD003
  CHECK(cudaFreeHost(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// The event is recorded on another stream than the launch's.
float event_recorded_on_other_stream(int n, cudaStream_t compute, cudaStream_t copies) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = pinned_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, compute>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, copies));
  CHECK(cudaEventSynchronize(done));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFreeHost(result));
  return first;
}

// The event is recorded before the launch was queued.
float event_recorded_before_launch(int n, cudaStream_t stream) {
  cudaEvent_t mark;
  CHECK(cudaEventCreate(&mark));
  float* result = managed_buffer(n);
  CHECK(cudaEventRecord(mark, stream));
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventSynchronize(mark));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// The event is recorded after the launch on its stream, but only another
// stream waits for it (cudaStreamWaitEvent): the host goes on.
float only_another_stream_waits(int n, cudaStream_t compute, cudaStream_t copies) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, compute>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, compute));
  CHECK(cudaStreamWaitEvent(copies, done, 0));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// The sync loop skips the first device's stream.
float sync_loop_skips_a_stream(int n, cudaStream_t* streams, int count) {
  float* result = managed_buffer(n);
  for (int d = 0; d < count; ++d) {
    fill<<<(n + 255) / 256, 256, 0, streams[d]>>>(result, n);
    CHECK(cudaGetLastError());
  }
  for (int d = 1; d < count; ++d) CHECK(cudaStreamSynchronize(streams[d]));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// The polling loop gives up after 100 tries, done or not.
float polling_loop_gives_up(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  int tries = 0;
  while (cudaStreamQuery(stream) == cudaErrorNotReady && tries < 100) ++tries;
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// Leaves on success, or when the spin budget runs out.
float polling_budget_runs_out(int n, cudaStream_t stream) {
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, stream));
  int spins = 0;
  do {
    if (cudaEventQuery(done) == cudaSuccess) break;
  } while (++spins < 1000);
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// A query whose result nobody tests waits for nothing.
float query_result_ignored(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  (void)cudaStreamQuery(stream);
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// A sync of another stream.
float syncs_the_wrong_stream(int n, cudaStream_t compute, cudaStream_t other) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, compute>>>(result, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(other));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaFree(result));
  return first;
}

// Mapped pinned memory, given to the kernel through its device pointer.
float mapped_through_device_pointer(int n) {
  float* host = nullptr;
  CHECK(cudaHostAlloc(&host, n * sizeof(float), cudaHostAllocMapped));
  float* device = nullptr;
  CHECK(cudaHostGetDevicePointer(&device, host, 0));
  fill<<<(n + 255) / 256, 256>>>(device, n);
  CHECK(cudaGetLastError());
  const float first = host[0];  // CHECK: GD003
  CHECK(cudaFreeHost(host));
  return first;
}

// cudaLaunchKernel: the stream is its sixth argument, the buffer inside args.
float launch_kernel_api(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  void* args[] = {&result, &n};
  CHECK(cudaLaunchKernel((const void*)fill, dim3((n + 255) / 256), dim3(256), args, 0, stream));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(result));
  return first;
}

// cudaLaunchKernelEx: the stream is the launch configuration's, and
// synchronising the default stream does not wait for it.
float launch_kernel_ex(int n) {
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* result = managed_buffer(n);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((n + 255) / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  CHECK(cudaLaunchKernelEx(&config, fill, result, n));
  CHECK(cudaStreamSynchronize(0));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(stream));
  return first;
}

// Its C form, with an argument array and the stream in the initialiser.
float launch_kernel_ex_c(int n, cudaStream_t stream) {
  float* result = pinned_buffer(n);
  void* args[] = {&result, &n};
  const cudaLaunchConfig_t config = {dim3((n + 255) / 256), dim3(256), 0, stream, nullptr, 0};
  CHECK(cudaLaunchKernelExC(&config, (const void*)fill, args));
  const float first = result[0];  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(result));
  return first;
}

// The host writes what the kernel is still writing.
void host_writes_during_launch(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  result[0] = 0.0f;  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(result));
}

// memcpy and fwrite read the memory too.
void copied_out_too_early(float* out, FILE* file, int n, cudaStream_t stream) {
  float* result = pinned_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  memcpy(out, result, n * sizeof(float));  // CHECK: GD003
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  fwrite(result, sizeof(float), n, file);  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFreeHost(result));
}

// A helper of the file that dereferences the memory on the host.
float sum_on_host(const float* values, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += values[i];
  return sum;
}

float helper_reads_too_early(int n, cudaStream_t stream) {
  float* result = managed_buffer(n);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(result, n);
  CHECK(cudaGetLastError());
  const float sum = sum_on_host(result, n);  // CHECK: GD003
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(result));
  return sum;
}
