// Fuzz entry points for the trace readers. Each returns 0 and must never
// crash, hang or leak on any input: bad input may only throw TraceError,
// which is caught here. fuzz_smoke_test.cpp runs them on mutated inputs in
// the test suite; with -DGPUDIAG_FUZZ=ON (clang-19) they become libFuzzer
// binaries for long runs (see README.md beside this file).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpudiag::fuzz {

int gdtrace_reader(const std::uint8_t* data, std::size_t size);
int kineto_importer(const std::uint8_t* data, std::size_t size);

}  // namespace gpudiag::fuzz
