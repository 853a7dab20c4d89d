// load_trace(): one entry point for every trace format, detected from the
// first bytes rather than the file name.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "file_bytes.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {

Trace load_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  char head[16] = {};
  in.read(head, sizeof head);
  const std::string_view first(head, static_cast<std::size_t>(in.gcount()));
  in.close();
  if (first.empty()) throw TraceError(path + ": empty file, not a trace");
  if (first.substr(0, 7) == "GDTRACE") return read_gdtrace(path);
  if (first.size() == 16 && first.substr(0, 15) == "SQLite format 3") return import_nsys(path);
  if (import::is_gzip(first)) return import_kineto(path);
  // JSON: the first non-blank character opens an object or array.
  for (char c : first) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '{' || c == '[') return import_kineto(path);
    break;
  }
  throw TraceError(path + ": unknown trace format (expected .gdtrace, Kineto/Chrome JSON, gzip JSON or an nsys SQLite export)");
}

}  // namespace gpudiag
