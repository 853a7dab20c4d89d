// The Python that benchmarks run PyTorch with, one choice for all of them.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

namespace gdrt_bench {

// GPUDIAG_PYTHON, else python3 on PATH when it imports torch (a GPU
// machine's PyTorch is often in a virtual environment), else Debian's.
inline std::string python_with_torch() {
  if (const char* chosen = std::getenv("GPUDIAG_PYTHON")) return chosen;
  const int status = std::system("python3 -c 'import torch' >/dev/null 2>&1");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "python3" : "/usr/bin/python3";
}

}  // namespace gdrt_bench
