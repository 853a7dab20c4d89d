#include <cuda_runtime.h>
#include <cstdlib>

#define CHECK(call) do { if ((call) != cudaSuccess) abort(); } while (0)

static float* make_device_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  return buffer;
}

static float* make_host_buffer(size_t n) { return static_cast<float*>(malloc(n * sizeof(float))); }

static float* make_managed_buffer(size_t n) {
  float* buffer = nullptr;
  CHECK(cudaMallocManaged(&buffer, n * sizeof(float)));
  return buffer;
}

static void alloc_device(float** out, size_t n) { CHECK(cudaMalloc(out, n * sizeof(float))); }

static void alloc_pinned(float** out, size_t n) { CHECK(cudaMallocHost((void**)out, n * sizeof(float))); }

void download(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
  // cudaMemcpyDefault lets the runtime decide: never a mismatch.
  CHECK(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDefault));
  free(host);
  CHECK(cudaFree(device));
}

void upload_pinned(size_t n) {
  float* pinned = nullptr;
  float* device = nullptr;
  alloc_pinned(&pinned, n);
  alloc_device(&device, n);
  CHECK(cudaMemcpy(device, pinned, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(device + 1, device, sizeof(float), cudaMemcpyDeviceToDevice));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
}

// Managed memory is valid on either side.
void managed_either_way(size_t n) {
  float* managed = make_managed_buffer(n);
  float* host = make_host_buffer(n);
  CHECK(cudaMemcpy(managed, host, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(managed, host, n * sizeof(float), cudaMemcpyHostToHost));
  free(host);
  CHECK(cudaFree(managed));
}

static void upload(float* dst, const float* src, size_t n) {
  CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
}

void upload_right(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  upload(device, host, n);
  free(host);
  CHECK(cudaFree(device));
}

// Tricky negative: callers disagree on the parameter, so nothing is known
// inside the helper (the wrong call is not this check's to guess).
static void copy_any(float* dst, const float* src, size_t n) {
  CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
}

void copy_both_ways(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  copy_any(device, host, n);
  copy_any(host, device, n);
  free(host);
  CHECK(cudaFree(device));
}

// Tricky negative: the helper's address is taken, so its callers are not all known.
static void upload_by_pointer(float* dst, const float* src, size_t n) {
  CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost));
}
void (*const upload_hook)(float*, const float*, size_t) = upload_by_pointer;

void call_through_hook(size_t n) {
  float* device = make_device_buffer(n);
  float* host = make_host_buffer(n);
  upload_by_pointer(device, host, n);
  free(host);
  CHECK(cudaFree(device));
}

// Tricky negative: a helper that returns either kind has no known origin.
static float* make_either(size_t n, bool on_device) {
  if (on_device) return make_device_buffer(n);
  return make_host_buffer(n);
}

void copy_from_either(size_t n, bool on_device) {
  float* buffer = make_either(n, on_device);
  float* host = make_host_buffer(n);
  CHECK(cudaMemcpy(buffer, host, n * sizeof(float), cudaMemcpyHostToHost));
  free(host);
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
  CHECK(cudaMemcpy(mirror.h_values, mirror.d_values, mirror.n * sizeof(float), cudaMemcpyDeviceToHost));
}

// Tricky negative: a field given both kinds of memory has no known origin.
struct Staging {
  float* buffer;
};

static void staging_on_device(Staging* staging, size_t n) { CHECK(cudaMalloc(&staging->buffer, n * sizeof(float))); }
static void staging_on_host(Staging* staging, size_t n) { staging->buffer = make_host_buffer(n); }

void staging_copy(Staging& staging, const float* device, size_t n) {
  CHECK(cudaMemcpy(staging.buffer, device, n * sizeof(float), cudaMemcpyDeviceToHost));
}

// Tricky negative: the field is also filled through a pointer to it.
struct Slot {
  float* data;
};

static void slot_fill(Slot* slot, size_t n, bool on_device) {
  CHECK(cudaMalloc(&slot->data, n * sizeof(float)));
  float** where = &slot->data;
  if (!on_device) *where = make_host_buffer(n);
}

void slot_copy(Slot& slot, const float* device, size_t n) {
  CHECK(cudaMemcpy(slot.data, device, n * sizeof(float), cudaMemcpyDeviceToHost));
}

void use_all(size_t n) {
  Mirror mirror;
  mirror_init(&mirror, n);
  mirror_fetch(mirror);
  Staging a, b;
  staging_on_device(&a, n);
  staging_on_host(&b, n);
  Slot slot;
  slot_fill(&slot, n, false);
}
