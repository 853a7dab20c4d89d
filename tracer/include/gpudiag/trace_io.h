// Reading and writing traces by format. Most callers want load_trace()
// (trace.h), which detects the format; these are the per-format entry points.
#pragma once

#include <iosfwd>
#include <string>

#include "gpudiag/trace.h"

namespace gpudiag {

// The whole file at `path` (a regular file, or a pipe read to its end), with
// at least `spare` bytes of capacity past the end for parsers that read ahead.
// Throws TraceError naming the path: missing, unreadable, a directory.
std::string read_file(const std::string& path, std::size_t spare = 0);

// .gdtrace (see tracer/format/FORMAT.md). Throws TraceError when the file is
// not a .gdtrace; a file cut short loads up to its last whole chunk.
Trace read_gdtrace(const std::string& path);
// Same, from bytes in memory (`name` is used in messages).
Trace read_gdtrace_bytes(std::string_view bytes, const std::string& name);
// Writes a Trace as .gdtrace (e.g. an imported trace, or one built in a test).
// Symbols of imported stacks are not kept: frames are stored as addresses.
// The End chunk of a clean stop is written only when trace.stopped_cleanly.
void write_gdtrace(const Trace& trace, const std::string& path);

// PyTorch profiler / Kineto Chrome-trace JSON, plain or gzip.
Trace import_kineto(const std::string& path);
Trace import_kineto_bytes(std::string_view json, const std::string& name);

// Nsight Systems SQLite export (`nsys export --type sqlite`).
Trace import_nsys(const std::string& path);

// Chrome trace JSON (chrome://tracing, ui.perfetto.dev): a process per device
// (and one for the host), a thread track per stream, a counter of live memory.
void write_chrome_trace(const Trace& trace, std::ostream& out);

}  // namespace gpudiag
