// Reading and writing .gdtrace files, gpudiag's own format. Most readers want
// load_trace() (gpudiag/import/load_trace.h), which detects any format.
#pragma once

#include <string>

#include "gpudiag/trace.h"

namespace gpudiag {

// The whole file at `path` (a regular file, or a pipe read to its end), with
// at least `spare` bytes of capacity past the end for parsers that read ahead.
// Throws TraceError naming the path: missing, unreadable, a directory.
std::string read_file(const std::string& path, std::size_t spare = 0);

// .gdtrace (see trace/FORMAT.md). Throws TraceError when the file is
// not a .gdtrace; a file cut short loads up to its last whole chunk.
Trace read_gdtrace(const std::string& path);
// Same, from bytes in memory (`name` is used in messages).
Trace read_gdtrace_bytes(std::string_view bytes, const std::string& name);
// Where the process of the .gdtrace at `path` stood (Trace::job, its pid in
// `pid` when given), read from its Identity chunk without its events. A
// default JobPlace when the trace does not say (a trace from before it, a
// file cut or damaged before it); throws TraceError as read_gdtrace does.
JobPlace read_gdtrace_job(const std::string& path, std::int64_t* pid = nullptr);
// Writes a Trace as .gdtrace (e.g. an imported trace, or one built in a test).
// Symbols of imported stacks are not kept: frames are stored as addresses.
// The End chunk of a clean stop is written only when trace.stopped_cleanly.
void write_gdtrace(const Trace& trace, const std::string& path);
// The same, bounded as `gpudiag trace --max-size` bounds a recording: past
// max_bytes (keep file and segment files together), the oldest events are
// dropped but for what the recorder keeps of them (trace/bound/retainer.h).
// For tests and tools that check what a bound keeps.
void write_gdtrace(const Trace& trace, const std::string& path, std::uint64_t max_bytes);

}  // namespace gpudiag
