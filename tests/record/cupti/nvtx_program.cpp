// A program that names its steps with NVTX ranges, as training loops do
// (torch.cuda.nvtx.range_push, nvtxRangePushA). NVTX loads whatever
// NVTX_INJECTION64_PATH names at the first call; the program must run the
// same whatever that library does.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>

int main() {
  for (int step = 0; step < 3; ++step) {
    char name[32];
    std::snprintf(name, sizeof name, "step %d", step);
    nvtxRangePushA(name);
    const nvtxRangeId_t inner = nvtxRangeStartA("forward");
    nvtxRangeEnd(inner);
    nvtxRangePop();
  }
  nvtxMarkA("done");
  std::puts("3 steps");
  return 0;
}
