// GD003 unsynced-transfer at run time: the host read the destination of an
// asynchronous device-to-host copy before a synchronisation that covers the
// copy's stream (stream, device or context sync, or an event sync).
// Two sources: host accesses a runtime's hooks recorded (gdrt), matched
// against copies and syncs by time; and accesses the copy guard caught on a
// GPU (the CUPTI library read-protects a pinned destination until a sync
// covers the copy), which name their copy.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

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

// Whether a host-blocking sync waits for the copy's stream.
bool waits_for(const Sync& s, const Memcpy& c) {
  switch (s.kind) {
    case SyncKind::Device:
    case SyncKind::Context: return s.device == c.device || s.device == kHostDevice;
    case SyncKind::Stream: return s.stream == c.stream;
    case SyncKind::Event:
    case SyncKind::Unknown: return true;  // the trace does not say which stream recorded the event: benefit of the doubt
    case SyncKind::Query: return s.stream == c.stream || s.stream == 0;  // that stream done, up to its event or all of it
    case SyncKind::StreamWaitEvent: return false;  // the host does not wait
  }
  return false;
}

// The earliest time a sync that began after `issued` and waits for the copy's
// stream ended: reads from then on are covered, reads before it are not.
std::uint64_t covered_from(const std::vector<const Sync*>& syncs, const Memcpy& c, std::uint64_t issued) {
  std::uint64_t first_end = UINT64_MAX;
  auto it = std::lower_bound(syncs.begin(), syncs.end(), issued,
                             [](const Sync* s, std::uint64_t t) { return s->start_ns < t; });
  for (; it != syncs.end() && (*it)->start_ns < first_end; ++it)
    if (waits_for(**it, c)) first_end = std::min(first_end, (*it)->end_ns);
  return first_end;
}

// Accesses the copy guard caught: each names its copy's correlation; the
// copy's record and API call give its size, stream and stack. One finding per copy.
void report_guarded_accesses(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  std::unordered_map<std::uint64_t, const Memcpy*> copies;
  std::unordered_map<std::uint64_t, const ApiCall*> calls;
  std::unordered_set<std::uint64_t> reported;
  for (const HostAccess& a : t.host_accesses) {
    if (a.guarded_copy == 0 || !reported.insert(a.guarded_copy).second) continue;
    if (copies.empty() && calls.empty()) {  // built once, when the trace has such an access
      for (const Memcpy& c : t.memcpys)
        if (c.correlation != 0) copies.emplace(c.correlation, &c);
      for (const ApiCall& call : t.api_calls)
        if (call.correlation != 0) calls.emplace(call.correlation, &call);
    }
    const auto c_it = copies.find(a.guarded_copy);
    const auto call_it = calls.find(a.guarded_copy);
    const Memcpy* c = c_it == copies.end() ? nullptr : c_it->second;
    const ApiCall* call = call_it == calls.end() ? nullptr : call_it->second;
    const bool write = a.access == AccessKind::Write;
    const std::string what = call ? std::string(t.str(call->name)) : std::string("an asynchronous copy");
    const std::string copy = c ? fmt::format("{} of {} on stream {}", what, format_bytes(c->bytes), c->stream)
                               : fmt::format("{} (its size and stream are not in the trace)", what);
    std::string timing;
    if (c && c->end_ns > c->start_ns)
      timing = a.time_ns < c->end_ns ? fmt::format("; the copy was still running and ended {} after the {}",
                                                   format_duration(c->end_ns - a.time_ns), write ? "write" : "read")
                                     : std::string("; the copy happened to finish first, it will not always");
    Finding f = make_finding(
        ctx,
        fmt::format("host {} at 0x{:x} of the destination of {} before any synchronisation covered the copy{}{}; "
                    "synchronise the copy's stream (cudaStreamSynchronize, or cudaEventSynchronize on an event recorded "
                    "after the copy) before the host touches the buffer",
                    write ? "write" : "read", a.addr, copy, timing,
                    write ? "; the copy may overwrite what the host wrote, or leave a mix of both" : ""));
    f.stack = frames_of(t, a.stack);
    const StackId issued = call && call->stack != kNoStack ? call->stack : c ? c->stack : kNoStack;
    f.notes.push_back({"the asynchronous copy was issued here", {}, frames_of(t, issued)});
    out.push_back(std::move(f));
  }
}

}  // namespace

void detect_unsynced_transfer(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  if (t.host_accesses.empty()) return;
  report_guarded_accesses(ctx, out);
  std::unordered_map<std::uint64_t, std::uint64_t> api_start;
  for (const ApiCall& a : t.api_calls)
    if (a.correlation != 0) api_start.emplace(a.correlation, a.start_ns);
  // Host reads and syncs in time order (a Trace built in code need not be sorted).
  std::vector<const HostAccess*> reads;
  for (const HostAccess& a : t.host_accesses)
    if (a.access == AccessKind::Read && a.guarded_copy == 0) reads.push_back(&a);  // guarded ones are reported above
  std::stable_sort(reads.begin(), reads.end(), [](auto* a, auto* b) { return a->time_ns < b->time_ns; });
  std::vector<const Sync*> syncs;
  for (const Sync& s : t.syncs) syncs.push_back(&s);
  std::stable_sort(syncs.begin(), syncs.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });

  for (const Memcpy& c : t.memcpys) {
    if (!c.async || !(c.copy == CopyKind::DtoH || is_host(c.dst_kind)) || c.bytes == 0) continue;
    const std::uint64_t issued = issue_time(c, api_start);
    const std::uint64_t covered = covered_from(syncs, c, issued);
    auto it = std::lower_bound(reads.begin(), reads.end(), issued,
                               [](const HostAccess* a, std::uint64_t v) { return a->time_ns < v; });
    for (; it != reads.end() && (*it)->time_ns < covered; ++it) {
      const HostAccess& a = **it;
      if (a.addr + std::max<std::uint64_t>(a.bytes, 1) <= c.dst || a.addr >= c.dst + c.bytes) continue;
      // A copy recorded only when queued has no end (end <= start): say nothing of its timing then.
      const bool ended = c.end_ns > c.start_ns;
      const std::string timing =
          !ended ? std::string()
          : a.time_ns < c.end_ns ? fmt::format(": the copy was still running and ended {} after the read",
                                               format_duration(c.end_ns - a.time_ns))
                                 : std::string(" (the copy happened to finish first; it will not always)");
      Finding f = make_finding(
          ctx, fmt::format("host read of {} at 0x{:x} while an asynchronous device-to-host copy into it ({} on "
                           "stream {}) had no synchronisation{}; synchronise the stream (cudaStreamSynchronize, "
                           "an event) before reading the buffer",
                           format_bytes(a.bytes), a.addr, format_bytes(c.bytes), c.stream, timing));
      f.stack = frames_of(t, a.stack);
      f.notes.push_back({"the asynchronous copy was issued here", {}, frames_of(t, c.stack)});
      out.push_back(std::move(f));
      break;  // one finding per copy
    }
  }
}

}  // namespace gpudiag
