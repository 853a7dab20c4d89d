// load_trace(): one entry point for every trace format, detected from the
// first bytes rather than the file name.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gpudiag/import/allocator_history.h"
#include "gpudiag/import/collectives.h"
#include "file_bytes.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {

namespace {

enum class Format { Gdtrace, Nsys, Kineto, Gzip, Pickle };

Format detect(std::string_view first, const std::string& path) {
  if (first.empty()) throw TraceError(path + ": empty file, not a trace");
  if (first.substr(0, 7) == "GDTRACE") return Format::Gdtrace;
  if (first.size() >= 16 && first.substr(0, 15) == "SQLite format 3") return Format::Nsys;
  if (import::is_gzip(first)) return Format::Gzip;
  // A pickle of protocol 2 to 5 opens with PROTO and its number: a PyTorch memory snapshot.
  if (first.size() >= 2 && static_cast<unsigned char>(first[0]) == 0x80 && first[1] >= 2 && first[1] <= 5)
    return Format::Pickle;
  // JSON: the first non-blank character opens an object or array.
  for (char c : first.substr(0, 16)) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '{' || c == '[') return Format::Kineto;
    break;
  }
  throw TraceError(path + ": unknown trace format (expected .gdtrace, Kineto/Chrome JSON, gzip JSON, an nsys SQLite "
                         "export or a PyTorch memory snapshot pickle)");
}

// Bytes already in memory: a pipe (which cannot be read twice) or a
// gunzipped file, a .gdtrace or JSON inside.
Trace load_bytes(const std::string& bytes, const std::string& path) {
  switch (detect(bytes, path)) {
    case Format::Gdtrace:
      return read_gdtrace_bytes(bytes, path);
    case Format::Kineto:
      return import_kineto_bytes(bytes, path);
    case Format::Gzip:
      return load_bytes(import::maybe_gunzip(bytes, path), path);
    case Format::Pickle:
      return import_torch_snapshot_bytes(bytes, path);
    case Format::Nsys:
      break;
  }
  throw TraceError(path + ": an Nsight Systems SQLite export must be read from a file, not a pipe or a gzip");
}

Trace load_trace_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // A directory opens and reads as empty: say what it is instead.
  if (std::filesystem::is_directory(status)) throw TraceError(path + ": is a directory, not a trace file");
  if (!ec && !std::filesystem::is_regular_file(status)) return load_bytes(read_file(path), path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  char head[16] = {};
  in.read(head, sizeof head);
  const std::string_view first(head, static_cast<std::size_t>(in.gcount()));
  in.close();
  switch (detect(first, path)) {
    case Format::Gdtrace:
      return read_gdtrace(path);
    case Format::Nsys:
      return import_nsys(path);
    case Format::Kineto:
      return import_kineto(path);
    case Format::Pickle:
      return import_torch_snapshot(path);
    case Format::Gzip: {  // a gzipped .gdtrace, snapshot or JSON
      std::string bytes = import::read_file_bytes(path);
      const Format inside = detect(bytes, path);
      if (inside == Format::Gdtrace) return read_gdtrace_bytes(bytes, path);
      if (inside == Format::Pickle) return import_torch_snapshot_bytes(bytes, path);
      return import::import_kineto_text(std::move(bytes), path);
    }
  }
  throw TraceError(path + ": unknown trace format");
}

}  // namespace

Trace load_trace(const std::string& path) {
  Trace trace = load_trace_file(path);
  if (trace.source == TraceSource::Gdtrace) import::read_allocator_history(trace, import::allocator_history_path(path));
  // Kineto's importer reads PyTorch's own records of the collectives; these
  // formats have none.
  if (trace.source == TraceSource::Gdtrace || trace.source == TraceSource::Nsys) find_collectives(trace);
  return trace;
}

}  // namespace gpudiag
