// The PyTorch UNet step on a GPU, untraced against each traced variant.
#pragma once

#include <string>
#include <vector>

namespace gpudiag::bench {

// A PyTorch UNet training step on a GPU untraced, traced and under
// torch.profiler (torch_unet_overhead.cpp).
// `only`: the variants to run besides the untraced one (by key: full, stacks,
// guard, args, deny, analysed, nocallbacks, profiler); all when empty.
void torch_unet_overhead(int rounds, const std::vector<std::string>& only = {});
bool is_gpu_variant(const std::string& key);

}  // namespace gpudiag::bench
