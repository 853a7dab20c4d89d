#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

__global__ void step(float* w, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 0.01f * w[i];
  if (i == 0) *loss = w[0];
}

// Tricky negatives: sync once after the loop; read the loss every 100 steps;
// a loop that copies a whole array once per device.
void train(float* w, float* loss, int n, int steps) {
  float host_loss = 0.0f;
  for (int s = 0; s < steps; ++s) {
    step<<<(n + 255) / 256, 256>>>(w, loss, n);
    CHECK(cudaGetLastError());
    if (s % 100 == 0) {
      CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
      std::printf("loss %f\n", host_loss);
    }
  }
  CHECK(cudaDeviceSynchronize());
}

void gather(float** device, float* host, int devices, int n) {
  for (int d = 0; d < devices; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMemcpy(host + d * n, device[d], n * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

// Tricky negative: double buffering waits for the event of the previous cycle
// of the other buffer, which bounds the work in flight without draining it.
void pipeline(float* w, float* loss, int n, int steps, cudaStream_t* streams, cudaEvent_t* done) {
  for (int s = 0; s < steps; ++s) {
    const int next = (s + 1) % 2;
    CHECK(cudaEventSynchronize(done[next]));
    step<<<(n + 255) / 256, 256, 0, streams[s % 2]>>>(w, loss, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(done[s % 2], streams[s % 2]));
  }
}
