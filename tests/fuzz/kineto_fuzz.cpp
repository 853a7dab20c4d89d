#include <string_view>

#include "fuzz_targets.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "report_properties.h"

namespace gpudiag::fuzz {

int kineto_importer(const std::uint8_t* data, std::size_t size) {
  return require_a_sound_report([&] {
    Trace t = import_kineto_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    for (const auto& k : t.kernels) (void)t.str(k.name).size();
    (void)t.end_ns();
    return t;
  });
}

}  // namespace gpudiag::fuzz

#ifdef GPUDIAG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpudiag::fuzz::kineto_importer(data, size);
}
#endif
