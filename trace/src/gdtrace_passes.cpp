#include "gpudiag/gdtrace_passes.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "chunk_payloads.h"
#include "file_view.h"
#include "gdtrace_index.h"
#include "gpudiag/trace_io.h"
#include "retainer.h"

namespace gpudiag {

using gdtrace::RawEvent;

struct GdtracePasses::State {
  gdtrace::GdtraceIndex index;
  std::vector<std::unique_ptr<FileView>> files;  // opened at the first pass
  // Where each pass begins; the last pass ends with the trace.
  std::vector<std::uint64_t> begins;
  std::size_t next = 0;
  gdtrace::Retainer retainer;
  std::vector<RawEvent> kept;  // of the passes returned so far
  gdtrace::Inflater inflater;
  std::vector<char> inflated;

  // The events of the chunk that start in [from, to), each with its thread.
  void load(const gdtrace::EventsChunk& c, std::uint64_t from, std::uint64_t to, std::vector<RawEvent>& out) {
    auto& file = files[c.file];
    if (!file) file = std::make_unique<FileView>(FileView::Piecewise{}, index.files[c.file]);
    const char* p = file->at(c.payload_at, c.length);  // throws when the file became shorter
    if (gdtrace::checksum(p, c.length) != c.crc)
      throw TraceError(index.files[c.file] + ": the file changed since it was first read");
    gdtrace::EventRecords records;
    if (!gdtrace::read_event_records(c.type, p, c.length, inflater, inflated, records))
      throw TraceError(index.files[c.file] + ": the file changed since it was first read");
    for (std::size_t i = 0; i < records.count; ++i) {
      const RawEvent e = records[i];
      if (!gdtrace::is_description(e) && e.t0 >= from && e.t0 < to) out.push_back(e);
    }
  }
};

GdtracePasses::GdtracePasses(const std::string& path, std::uint64_t events_per_pass)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.index = gdtrace::index_gdtrace(path);
  s.files.resize(s.index.files.size());
  events_per_pass = std::max<std::uint64_t>(events_per_pass, 1);
  // Cut where the events of the chunks begun so far reach a pass's worth.
  std::vector<const gdtrace::EventsChunk*> by_start;
  for (const auto& c : s.index.chunks) by_start.push_back(&c);
  std::stable_sort(by_start.begin(), by_start.end(), [](auto* a, auto* b) { return a->first_ns < b->first_ns; });
  std::uint64_t begin = std::numeric_limits<std::uint64_t>::max();
  if (!by_start.empty()) begin = by_start.front()->first_ns;
  for (const RawEvent& e : s.index.retained) begin = std::min(begin, e.t0);
  if (begin == std::numeric_limits<std::uint64_t>::max()) begin = 0;
  s.begins.push_back(begin);
  std::uint64_t in_pass = 0;
  for (const auto* c : by_start) {
    if (in_pass >= events_per_pass && c->first_ns > s.begins.back()) {
      s.begins.push_back(c->first_ns);
      in_pass = 0;
    }
    in_pass += c->count;
  }
}

GdtracePasses::~GdtracePasses() = default;

Trace& GdtracePasses::definitions() { return state_->index.definitions; }
std::uint64_t GdtracePasses::event_count() const { return state_->index.events; }
std::uint64_t GdtracePasses::events_of_kind(EventKind kind) const {
  return state_->index.events_of_kind[static_cast<std::uint8_t>(kind)];
}
std::size_t GdtracePasses::pass_count() const { return state_->begins.size(); }
std::uint64_t GdtracePasses::pass_begin_ns() const { return state_->next == 0 ? 0 : state_->begins[state_->next - 1]; }

bool GdtracePasses::next(Trace& pass) {
  State& s = *state_;
  if (s.next >= s.begins.size()) return false;
  pass = Trace();  // one pass in memory at a time
  const bool last = s.next + 1 == s.begins.size();
  // The first pass takes what starts before the first chunk's events (a
  // retained event of a bounded trace); the last, everything after.
  const std::uint64_t from = s.next == 0 ? 0 : s.begins[s.next];
  const std::uint64_t to = last ? std::numeric_limits<std::uint64_t>::max() : s.begins[s.next + 1];
  std::vector<RawEvent> events;
  for (const auto& c : s.index.chunks)
    if (c.last_ns >= from && c.first_ns < to) s.load(c, from, to, events);
  for (const RawEvent& e : s.index.retained)
    if (e.t0 >= from && e.t0 < to) events.push_back(e);
  std::stable_sort(events.begin(), events.end(), [](const RawEvent& a, const RawEvent& b) { return a.t0 < b.t0; });

  pass = s.index.definitions;
  for (const RawEvent& e : s.kept) gdtrace::add_event(pass, s.index.ids, e);
  for (const RawEvent& e : events) gdtrace::add_event(pass, s.index.ids, e);
  pass.join_syncs_with_their_calls();
  pass.sort_by_time();
  pass.detail_from_ns = std::max({s.index.definitions.detail_from_ns, s.begins[s.next], std::uint64_t{1}});
  if (!last) pass.complete_until_ns = std::min(pass.complete_until_ns, to);
  const std::vector<RawEvent> kept = s.retainer.keep_from(events);
  s.kept.insert(s.kept.end(), kept.begin(), kept.end());
  ++s.next;
  return true;
}

}  // namespace gpudiag
