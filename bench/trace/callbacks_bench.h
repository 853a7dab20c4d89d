// trace_bench callbacks: the CUPTI callback bodies (record/cupti/api_calls.h)
// driven on the CPU with parameter structs shaped as a PyTorch training
// step's calls and a fake driver; CPU ns per call for each part.
#pragma once

namespace gpudiag::bench {

// `quick`: fewer iterations and trials, for the smoke test. Returns the exit status.
int callbacks_bench(bool quick);

}  // namespace gpudiag::bench
