// Reading traces of every format gpudiag knows into one Trace: the format
// is detected from the content, or a caller names it.
#pragma once

#include <string>
#include <string_view>

#include "gpudiag/trace.h"

namespace gpudiag {

// Loads a trace of any supported format, detected from the content:
// .gdtrace (magic "GDTRACE"), SQLite (nsys export), JSON or gzipped JSON
// (Kineto / PyTorch profiler). Throws TraceError with a clear message on bad
// input. A .gdtrace cut short by a crash loads up to its last whole chunk and
// has `truncated` set; one without an End chunk has `stopped_cleanly` false.
Trace load_trace(const std::string& path);

// PyTorch profiler / Kineto Chrome-trace JSON, plain or gzip.
Trace import_kineto(const std::string& path);
Trace import_kineto_bytes(std::string_view json, const std::string& name);

// Nsight Systems SQLite export (`nsys export --type sqlite`).
Trace import_nsys(const std::string& path);

// PyTorch's memory snapshot (torch.cuda.memory._dump_snapshot), a pickle
// read by a data-only reader: one that asks to run anything is refused.
Trace import_torch_snapshot(const std::string& path);
Trace import_torch_snapshot_bytes(std::string_view bytes, const std::string& name);

}  // namespace gpudiag
