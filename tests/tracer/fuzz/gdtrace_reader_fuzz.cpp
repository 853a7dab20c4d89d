#include <string_view>

#include "fuzz_targets.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::fuzz {

int gdtrace_reader(const std::uint8_t* data, std::size_t size) {
  try {
    const Trace t = read_gdtrace_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.gdtrace");
    // Touch what analyses touch: ids must resolve without going out of range.
    for (const auto& k : t.kernels) (void)t.str(k.name).size();
    for (const auto& a : t.allocs) (void)t.stack(a.stack).frames.size();
    (void)t.begin_ns();
  } catch (const TraceError&) {
  }
  return 0;
}

}  // namespace gpudiag::fuzz

#ifdef GPUDIAG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpudiag::fuzz::gdtrace_reader(data, size);
}
#endif
