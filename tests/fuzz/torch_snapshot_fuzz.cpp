// A PyTorch memory snapshot, whatever its bytes: the data-only pickle
// reader and the snapshot importer never crash and run nothing, and every
// finding of the report stands on the snapshot's events.
#include <string_view>

#include "fuzz_targets.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "report_properties.h"

namespace gpudiag::fuzz {

int torch_snapshot(const std::uint8_t* data, std::size_t size) {
  return require_a_sound_report([&] {
    return import_torch_snapshot_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pickle");
  });
}

}  // namespace gpudiag::fuzz

#ifdef GPUDIAG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpudiag::fuzz::torch_snapshot(data, size);
}
#endif
