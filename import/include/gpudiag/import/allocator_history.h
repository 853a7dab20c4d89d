// A caching allocator's own history of its blocks, beside a trace.
#pragma once

#include <string>
#include <string_view>

#include "gpudiag/trace.h"

namespace gpudiag::import {

// What the history file says it is (its "format" field).
inline constexpr const char* kAllocatorHistoryFormat = "gpudiag-torch-memory";

// Where the history of the trace at `trace_path` lies: <trace>.torch-memory.json,
// named after the trace as it was written (x.gdtrace.gz's is x.gdtrace's).
std::string allocator_history_path(const std::string& trace_path);
// Where the Python hook writes PyTorch's snapshot at an out-of-memory:
// <trace>.torch-oom.pickle, named as the history is.
std::string out_of_memory_snapshot_path(const std::string& trace_path);

// Fills trace.cached_blocks from the history at `path`, if there is one. The
// trace's streams must be read: they map the history's stream handles to the
// trace's ids. An unreadable history leaves no blocks and says why in
// trace.allocator_history_note; it never stops the trace from loading.
void read_allocator_history(Trace& trace, const std::string& path);
// The same, from the history's text; `name` says where it came from in the note.
void read_allocator_history_text(Trace& trace, std::string_view text, const std::string& name);

}  // namespace gpudiag::import
