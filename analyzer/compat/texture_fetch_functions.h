// Empty stand-in: CUDA 13 removed texture_fetch_functions.h (legacy texture
// references), but clang 19's __clang_cuda_runtime_wrapper.h still includes
// it. gpulint puts this folder on an -idirafter path so the real header wins
// wherever it exists.
#pragma once
