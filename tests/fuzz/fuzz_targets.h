// Fuzz entry points for the trace readers. Each returns 0 and must never
// crash, hang or leak on any input: bad input may only throw TraceError,
// which is caught here. Each also checks what every report must hold
// (report_properties.h) and aborts when it does not. fuzz_smoke_test.cpp runs them on mutated inputs in
// the test suite; with -DGPUDIAG_FUZZ=ON (clang-19) they become libFuzzer
// binaries for long runs (see README.md beside this file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpudiag::fuzz {

int gdtrace_reader(const std::uint8_t* data, std::size_t size);
int kineto_importer(const std::uint8_t* data, std::size_t size);
int allocator_history(const std::uint8_t* data, std::size_t size);
int torch_snapshot(const std::uint8_t* data, std::size_t size);

// A history in the format `gpudiag trace` writes beside a trace, for the
// trace allocator_history reads it into: one tensor dropped while another
// stream's kernel reads it.
std::string allocator_history_seed();

}  // namespace gpudiag::fuzz
