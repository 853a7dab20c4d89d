// The CUDA program of the end-to-end CUPTI tests: it uses every allocation
// family the injection library records, several streams, events and a
// captured graph, and prints what it computed, so that a run traced and one
// untraced can be compared. Exit 0 when every result is right.
//   - device: cudaMalloc, cudaMallocPitch, cudaMallocAsync, cudaMallocFromPoolAsync,
//     cudaFreeAsync of cudaMalloc memory (which crashed the driver while CUPTI's
//     MEMORY2 activity was on), one cudaMalloc that runs out of memory;
//   - host: cudaMallocHost, cudaHostAlloc, cudaHostRegister, pageable memory;
//   - managed: cudaMallocManaged;
//   - virtual memory: cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess,
//     cuMemUnmap, cuMemRelease (what PyTorch's expandable segments use).
// With the argument "guard" it plays the copy guard's cases instead (see
// guard_scenarios): three host accesses before a sync, and the syncs that
// must let the host read without a fault. With "steps", a loop of five
// steps, each an NVTX range "step N" (see nvtx_steps).
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

__global__ void fill(float* x, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add(const float* a, const float* b, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

#define CUDA(call) check((call) == cudaSuccess, #call)
#define DRIVER(call) check((call) == CUDA_SUCCESS, #call)

constexpr int kN = 1 << 16;
constexpr int kBlocks = (kN + 255) / 256;

double sum(const float* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  return s;
}

// Device memory mapped through the virtual-memory API, filled and read back.
double virtual_memory(cudaStream_t stream) {
  CUdevice device;
  DRIVER(cuCtxGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  DRIVER(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const std::size_t bytes = ((kN * sizeof(float) + granularity - 1) / granularity) * granularity;
  CUmemGenericAllocationHandle handle;
  CUdeviceptr va = 0;
  DRIVER(cuMemCreate(&handle, bytes, &prop, 0));
  DRIVER(cuMemAddressReserve(&va, bytes, 0, 0, 0));
  DRIVER(cuMemMap(va, bytes, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DRIVER(cuMemSetAccess(va, bytes, &access, 1));
  auto* x = reinterpret_cast<float*>(va);
  fill<<<kBlocks, 256, 0, stream>>>(x, 0.5f, kN);
  std::vector<float> host(kN);
  CUDA(cudaMemcpyAsync(host.data(), x, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA(cudaStreamSynchronize(stream));
  DRIVER(cuMemUnmap(va, bytes));
  DRIVER(cuMemAddressFree(va, bytes));
  DRIVER(cuMemRelease(handle));
  return sum(host.data(), kN);
}

volatile float g_sink = 0;

// Reads and writes of asynchronous copies' destinations, before and after
// their syncs. Traced with the copy guard on, exactly three accesses are
// caught, in this order: a read of pinned memory, a write of it, and a read
// of registered memory; every result is still right.
__attribute__((noinline)) int guard_scenarios() {
  constexpr int n = 1 << 20;  // 4 MiB: many whole pages
  constexpr std::size_t bytes = n * sizeof(float);
  constexpr int blocks = (n + 255) / 256;
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t copied;
  CUDA(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  float* d = nullptr;
  float* h = nullptr;
  CUDA(cudaMalloc(&d, bytes));
  CUDA(cudaMallocHost(&h, bytes));

  // 1. A read before the sync: caught; the copy engine still writes every page.
  fill<<<blocks, 256, 0, s>>>(d, 1.0f, n);
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  g_sink = h[n / 2];
  CUDA(cudaStreamSynchronize(s));
  check(sum(h, n) == n, "a read before the sync: the copy wrote all of it");

  // 2. A write before the sync: caught, reported as a write.
  fill<<<blocks, 256, 0, s>>>(d, 2.0f, n);
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  h[n / 4] = 2.0f;
  CUDA(cudaStreamSynchronize(s));
  check(sum(h, n) == 2.0 * n, "a write before the sync");

  // 3. Synchronised each way the guard knows: no access is caught.
  fill<<<blocks, 256, 0, s>>>(d, 3.0f, n);
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  CUDA(cudaEventRecord(copied, s));
  CUDA(cudaEventSynchronize(copied));
  check(sum(h, n) == 3.0 * n, "after an event sync");
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  while (cudaStreamQuery(s) == cudaErrorNotReady) {
  }
  check(sum(h, n) == 3.0 * n, "after a stream query said done");
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  CUDA(cudaDeviceSynchronize());
  check(sum(h, n) == 3.0 * n, "after a device sync");
  CUDA(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
  CUDA(cudaEventRecord(copied, s));
  CUDA(cudaEventSynchronize(copied));
  CUDA(cudaMemcpyAsync(h, d, 16, cudaMemcpyDeviceToHost, s));  // within one page: nothing to protect
  g_sink = h[1];
  CUDA(cudaStreamSynchronize(s));

  // 4. Registered memory: a read before the sync is caught.
  std::vector<float> registered(n);
  CUDA(cudaHostRegister(registered.data(), bytes, cudaHostRegisterDefault));
  CUDA(cudaMemcpyAsync(registered.data(), d, bytes, cudaMemcpyDeviceToHost, s));
  g_sink = registered[n / 2];
  CUDA(cudaStreamSynchronize(s));
  check(sum(registered.data(), n) == 3.0 * n, "registered memory");
  CUDA(cudaHostUnregister(registered.data()));

  // 5. Freed before any sync: released first, so the memory is usable again.
  float* early_free = nullptr;
  CUDA(cudaMallocHost(&early_free, bytes));
  CUDA(cudaMemcpyAsync(early_free, d, bytes, cudaMemcpyDeviceToHost, s));
  CUDA(cudaFreeHost(early_free));
  float* again = nullptr;
  CUDA(cudaMallocHost(&again, bytes));
  std::memset(again, 0, bytes);
  CUDA(cudaFreeHost(again));

  // 6. Pageable memory is not guarded (the copy returns done).
  std::vector<float> pageable(n);
  CUDA(cudaMemcpyAsync(pageable.data(), d, bytes, cudaMemcpyDeviceToHost, s));
  check(sum(pageable.data(), n) == 3.0 * n, "pageable memory");

  CUDA(cudaStreamSynchronize(s));
  CUDA(cudaFreeHost(h));
  CUDA(cudaFree(d));
  CUDA(cudaEventDestroy(copied));
  CUDA(cudaStreamDestroy(s));
  std::printf("guard %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

// Five steps of three kernels and a sync each, every step inside its own
// NVTX range, as a training loop names its steps.
int nvtx_steps() {
  float* x = nullptr;
  CUDA(cudaMalloc(&x, kN * sizeof(float)));
  for (int step = 0; step < 5; ++step) {
    char name[16];
    std::snprintf(name, sizeof name, "step %d", step);
    nvtxRangePushA(name);
    fill<<<kBlocks, 256>>>(x, 1.0f, kN);
    scale<<<kBlocks, 256>>>(x, 2.0f, kN);
    scale<<<kBlocks, 256>>>(x, 0.5f, kN);
    CUDA(cudaDeviceSynchronize());
    nvtxRangePop();
  }
  CUDA(cudaFree(x));
  std::printf("steps ok\n");
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "guard") == 0) return guard_scenarios();
  if (argc > 1 && std::strcmp(argv[1], "steps") == 0) return nvtx_steps();
  cudaStream_t s1, s2;
  CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t filled;
  CUDA(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));

  // Plain, pitched and stream-ordered device memory.
  float *a = nullptr, *b = nullptr, *out = nullptr, *pitched = nullptr;
  std::size_t pitch = 0;
  CUDA(cudaMalloc(&a, kN * sizeof(float)));
  CUDA(cudaMallocPitch(&pitched, &pitch, 1000, 8));
  CUDA(cudaMallocAsync(&b, kN * sizeof(float), s1));
  cudaMemPool_t pool;
  CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  CUDA(cudaMallocFromPoolAsync(&out, kN * sizeof(float), pool, s2));

  // A request no GPU can meet: out of memory, then the error is cleared.
  void* huge = nullptr;
  check(cudaMalloc(&huge, std::size_t{1} << 50) == cudaErrorMemoryAllocation, "cudaMalloc of 1 PiB fails");
  check(cudaGetLastError() == cudaErrorMemoryAllocation, "cudaGetLastError reports it once");

  // s1 fills a and b; s2 waits for it through an event.
  fill<<<kBlocks, 256, 0, s1>>>(a, 1.0f, kN);
  CUDA(cudaMemsetAsync(b, 0, kN * sizeof(float), s1));
  fill<<<kBlocks, 256, 0, s1>>>(b, 2.0f, kN);
  CUDA(cudaEventRecord(filled, s1));
  CUDA(cudaStreamWaitEvent(s2, filled, 0));

  // A graph captured on s2: add, then scale by 3.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
  add<<<kBlocks, 256, 0, s2>>>(a, b, out, kN);
  scale<<<kBlocks, 256, 0, s2>>>(out, 3.0f, kN);
  CUDA(cudaStreamEndCapture(s2, &graph));
  CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CUDA(cudaGraphLaunch(exec, s2));

  // Results come back into pinned, registered and pageable memory.
  float *pinned = nullptr, *host_alloc = nullptr;
  CUDA(cudaMallocHost(&pinned, kN * sizeof(float)));
  CUDA(cudaHostAlloc(&host_alloc, kN * sizeof(float), cudaHostAllocDefault));
  std::vector<float> registered(kN), pageable(kN);
  CUDA(cudaHostRegister(registered.data(), kN * sizeof(float), cudaHostRegisterDefault));
  CUDA(cudaMemcpyAsync(pinned, out, kN * sizeof(float), cudaMemcpyDeviceToHost, s2));
  CUDA(cudaMemcpyAsync(registered.data(), a, kN * sizeof(float), cudaMemcpyDeviceToHost, s2));
  CUDA(cudaStreamSynchronize(s2));
  CUDA(cudaMemcpy(host_alloc, b, kN * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(pageable.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));

  // cudaMalloc memory released stream-ordered, after s2 is done with it.
  CUDA(cudaFreeAsync(a, s2));
  CUDA(cudaFreeAsync(b, s1));
  CUDA(cudaFreeAsync(out, s2));
  CUDA(cudaStreamSynchronize(s1));
  CUDA(cudaStreamSynchronize(s2));

  // Managed memory, touched by a kernel and the host.
  float* managed = nullptr;
  CUDA(cudaMallocManaged(&managed, kN * sizeof(float)));
  fill<<<kBlocks, 256>>>(managed, 0.25f, kN);
  CUDA(cudaDeviceSynchronize());
  const double managed_sum = sum(managed, kN);

  const double vmm_sum = virtual_memory(s1);

  std::printf("graph %.1f registered %.1f host_alloc %.1f pageable %.1f managed %.1f vmm %.1f\n", sum(pinned, kN),
              sum(registered.data(), kN), sum(host_alloc, kN), sum(pageable.data(), kN), managed_sum, vmm_sum);
  check(sum(pinned, kN) == 9.0 * kN && sum(pageable.data(), kN) == 9.0 * kN, "(1 + 2) * 3 everywhere");
  check(sum(registered.data(), kN) == kN && sum(host_alloc, kN) == 2.0 * kN, "the copies of a and b");
  check(managed_sum == 0.25 * kN && vmm_sum == 0.5 * kN, "managed and mapped memory");

  CUDA(cudaHostUnregister(registered.data()));
  CUDA(cudaFreeHost(pinned));
  CUDA(cudaFreeHost(host_alloc));
  CUDA(cudaFree(managed));
  CUDA(cudaFree(pitched));
  CUDA(cudaGraphExecDestroy(exec));
  CUDA(cudaGraphDestroy(graph));
  CUDA(cudaEventDestroy(filled));
  CUDA(cudaStreamDestroy(s1));
  CUDA(cudaStreamDestroy(s2));
  std::printf("%s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
