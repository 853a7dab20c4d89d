// A traced program that dies the way a CUDA program does when the host
// reads device memory: it records a device allocation at an address the host
// cannot touch (a PROT_NONE page, as a cudaMalloc pointer is to the host),
// optionally frees it, then reads it and dies of SIGSEGV.
// Usage: device_fault_program live|freed TRACE
#include <sys/mman.h>

#include <cstdio>
#include <cstring>

#include "gpudiag/record.h"

namespace rec = gpudiag::rec;

namespace {

[[gnu::noinline]] void* allocate_device_buffer(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  rec::record(rec::AllocEvent{.addr = reinterpret_cast<std::uint64_t>(p), .bytes = bytes,
                              .kind = gpudiag::MemKind::Device, .device = 0, .stack = rec::capture_stack()});
  return p;
}

[[gnu::noinline]] float read_loss_on_host(const volatile float* loss) { return loss[4]; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s live|freed TRACE\n", argv[0]);
    return 2;
  }
  if (!rec::start(argv[2])) return 3;
  auto* loss = static_cast<float*>(allocate_device_buffer(4096));
  if (std::strcmp(argv[1], "freed") == 0)
    rec::record(rec::FreeEvent{.addr = reinterpret_cast<std::uint64_t>(loss), .kind = gpudiag::MemKind::Device,
                               .device = 0, .stack = rec::capture_stack()});
  std::printf("%f\n", read_loss_on_host(loss));
  return 0;
}
