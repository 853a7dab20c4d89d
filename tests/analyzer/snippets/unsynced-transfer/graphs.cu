#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// A copy captured into a graph runs when the graph is launched, on the
// launch stream: reading before that stream is synchronised is a bug.
void read_before_graph_sync(const float* device, cudaStream_t capture, cudaStream_t launch) {
  float residual = 0.0f;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(&residual, device, sizeof(float), cudaMemcpyDeviceToHost, capture));
  CHECK(cudaStreamEndCapture(capture, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  CHECK(cudaGraphLaunch(exec, launch));
  std::printf("residual %f\n", residual);  // CHECK: GD003
  CHECK(cudaStreamSynchronize(launch));
}

// Tricky negative (cuda-samples' conjugateGradientCudaGraphs): the captured
// copy did not run at capture time; the launch stream is synchronised before
// each read.
void read_after_graph_sync(const float* device, cudaStream_t capture, cudaStream_t launch, int iterations) {
  float residual = 1.0f;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(&residual, device, sizeof(float), cudaMemcpyDeviceToHost, capture));
  CHECK(cudaStreamEndCapture(capture, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  for (int k = 0; k < iterations && residual > 1e-6f; ++k) {
    CHECK(cudaGraphLaunch(exec, launch));
    CHECK(cudaStreamSynchronize(launch));  // CHECK: GD010 (the per-iteration sync is the sample's own design)
    std::printf("iteration %d residual %f\n", k, residual);
  }
}
