// GD003 unsynced-transfer at run time: the host read the destination of an
// asynchronous device-to-host copy before a synchronisation that covers the
// copy's stream (stream, device or context sync, or an event sync).
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

// When the host issued the copy: its API call when the trace links them
// (correlation id), else the copy's own start.
std::uint64_t issue_time(const Memcpy& c, const std::unordered_map<std::uint64_t, std::uint64_t>& api_start) {
  if (c.correlation != 0)
    if (auto it = api_start.find(c.correlation); it != api_start.end()) return std::min(it->second, c.start_ns);
  return c.start_ns;
}

// A sync that began after the copy was issued, ended before the read, and
// waits for the copy's stream.
bool covered(const Trace& trace, const Memcpy& c, std::uint64_t issued, std::uint64_t read_ns) {
  for (const Sync& s : trace.syncs) {
    if (s.start_ns > read_ns) break;  // syncs are sorted by start
    if (s.start_ns < issued || s.end_ns > read_ns) continue;
    switch (s.kind) {
      case SyncKind::Device:
      case SyncKind::Context:
        if (s.device == c.device || s.device == kHostDevice) return true;
        break;
      case SyncKind::Stream:
        if (s.stream == c.stream) return true;
        break;
      case SyncKind::Event:
      case SyncKind::Unknown:
        // The trace does not say which stream recorded the event: give the benefit of the doubt.
        return true;
      case SyncKind::StreamWaitEvent:
        break;  // the host does not wait
    }
  }
  return false;
}

}  // namespace

void detect_unsynced_transfer(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.host_accesses.empty()) return;
  std::unordered_map<std::uint64_t, std::uint64_t> api_start;
  for (const ApiCall& a : t.api_calls)
    if (a.correlation != 0) api_start.emplace(a.correlation, a.start_ns);
  for (const Memcpy& c : t.memcpys) {
    if (!c.async || !(c.copy == CopyKind::DtoH || is_host(c.dst_kind)) || c.bytes == 0) continue;
    const std::uint64_t issued = issue_time(c, api_start);
    for (const HostAccess& a : t.host_accesses) {
      if (a.access != AccessKind::Read || a.time_ns < issued) continue;
      if (a.addr + std::max<std::uint64_t>(a.bytes, 1) <= c.dst || a.addr >= c.dst + c.bytes) continue;
      if (covered(t, c, issued, a.time_ns)) continue;
      const bool unfinished = a.time_ns < c.end_ns;
      Finding f = make_finding(
          "GD003", fmt::format("host read of {} at 0x{:x} while an asynchronous device-to-host copy into it ({} on "
                               "stream {}) had no synchronisation{}; synchronise the stream (cudaStreamSynchronize, "
                               "an event) before reading the buffer",
                               format_bytes(a.bytes), a.addr, format_bytes(c.bytes), c.stream,
                               unfinished ? fmt::format(": the copy was still running and ended {} after the read",
                                                        format_duration(c.end_ns - a.time_ns))
                                          : " (the copy happened to finish first; it will not always)"));
      f.stack = frames_of(t, a.stack);
      f.notes.push_back({"the asynchronous copy was issued here", {}, frames_of(t, c.stack)});
      out.push_back(std::move(f));
      break;  // one finding per copy
    }
  }
}

}  // namespace gpudiag
