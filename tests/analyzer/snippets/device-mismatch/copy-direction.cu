#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

// Copy kinds that contradict where the pointers' memory came from, when that
// is known only across functions: a helper's return value, an out-parameter,
// a parameter every caller fills the same way, a struct field.

static float* make_device_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  return buffer;
}

static float* make_host_buffer(size_t n) { return static_cast<float*>(malloc(n * sizeof(float))); }

static void alloc_device(float** out, size_t n) { CHECK(cudaMalloc(out, n * sizeof(float))); }

static void alloc_pinned(float** out, size_t n) { CHECK(cudaMallocHost((void**)out, n * sizeof(float))); }

void download_with_upload_kind(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyHostToDevice));  // CHECK: GD001, GD001
  free(host);
  CHECK(cudaFree(device));
}

void upload_with_download_kind(size_t n) {
  float* pinned = nullptr;
  float* device = nullptr;
  alloc_pinned(&pinned, n);
  alloc_device(&device, n);
  CHECK(cudaMemcpy(device, pinned, n * sizeof(float), cudaMemcpyDeviceToHost));  // CHECK: GD001, GD001
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
}

void device_copy_from_host(size_t n) {
  float* a = make_device_buffer(n);
  float* b = make_host_buffer(n);
  CHECK(cudaMemcpy(a, b, n * sizeof(float), cudaMemcpyDeviceToDevice));  // CHECK: GD001
  free(b);
  CHECK(cudaFree(a));
}

void host_copy_into_device(size_t n) {
  float* a = make_device_buffer(n);
  float* b = make_host_buffer(n);
  CHECK(cudaMemcpy(a, b, n * sizeof(float), cudaMemcpyHostToHost));  // CHECK: GD001
  free(b);
  CHECK(cudaFree(a));
}

// The copy is right for neither caller: both pass the host buffer as the destination.
static void upload(float* dst, const float* src, size_t n) {
  CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));  // CHECK: GD001, GD001
}

void upload_swapped_once(size_t n) {
  float* device = make_device_buffer(n);
  float* pinned = nullptr;
  alloc_pinned(&pinned, n);
  upload(pinned, device, n);
  upload(pinned, device, n / 2);
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
}

struct Mirror {
  float* d_values;
  float* h_values;
  size_t n;
};

static void mirror_init(Mirror* mirror, size_t n) {
  mirror->n = n;
  CHECK(cudaMalloc(&mirror->d_values, n * sizeof(float)));
  CHECK(cudaMallocHost(&mirror->h_values, n * sizeof(float)));
}

static void mirror_fetch(Mirror& mirror) {
  CHECK(cudaMemcpy(mirror.d_values, mirror.h_values, mirror.n * sizeof(float), cudaMemcpyDeviceToHost));  // CHECK: GD001, GD001
}

void use_mirror(size_t n) {
  Mirror mirror;
  mirror_init(&mirror, n);
  mirror_fetch(mirror);
  CHECK(cudaFree(mirror.d_values));
  CHECK(cudaFreeHost(mirror.h_values));
}
