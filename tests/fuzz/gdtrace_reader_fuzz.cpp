#include <string_view>

#include "fuzz_targets.h"
#include "gdtrace_image.h"
#include "gpudiag/trace_io.h"
#include "report_properties.h"

namespace gpudiag::fuzz {

int gdtrace_reader(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const Trace t = read_gdtrace_bytes(bytes, "fuzz.gdtrace");
    // Touch what analyses touch: ids must resolve without going out of range.
    for (const auto& k : t.kernels) (void)t.str(k.name).size();
    for (const auto& a : t.allocs) (void)t.stack(a.stack).frames.size();
    (void)t.begin_ns();
    require(finding_without_evidence(t, analyze(t)));
  } catch (const TraceError&) {
    return 0;
  }
  // Whatever a file holds, cutting it short takes evidence away and must
  // never make an error appear.
  require(error_only_in_a_cut(bytes, 3));
  return 0;
}

}  // namespace gpudiag::fuzz

#ifdef GPUDIAG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpudiag::fuzz::gdtrace_reader(data, size);
}

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

// libFuzzer's own mutations, then valid chunk checksums on seven inputs in
// eight so mutated payloads reach the chunk parsers; the eighth keeps the
// checksum-mismatch path in the corpus.
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 != 0) gpudiag::fuzz::fix_chunk_checksums(reinterpret_cast<char*>(data), size);
  return size;
}
#endif
