// Trace -> Chrome trace JSON (chrome://tracing, ui.perfetto.dev). Layout:
// a process per device ("GPU 0 ...") with a thread track per stream for
// kernels, copies and memsets; a "host" process with a track per thread for
// API calls, syncs, allocations and findings; counter tracks of live memory
// per device (from allocations and frees) and of the allocator's own totals
// when the source has them. Events are streamed, one JSON object per line.
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <unordered_map>

#include "gpudiag/trace_io.h"
#include "gpudiag/export/chrome_trace.h"

namespace gpudiag {
namespace {

using nlohmann::json;

constexpr int kHostPid = 1;
// 64-bit: a device id is whatever the trace says, up to INT32_MAX.
std::int64_t device_pid(std::int32_t device) { return device < 0 ? kHostPid : 100 + std::int64_t{device}; }

class ChromeWriter {
 public:
  ChromeWriter(const Trace& t, std::ostream& out) : t_(t), out_(out), origin_(t.begin_ns()) {}

  void write() {
    out_ << "{\"displayTimeUnit\": \"ns\", \"otherData\": " << json{{"source", to_string(t_.source)}, {"path", t_.path},
                                                                   {"dropped_events", t_.dropped_events},
                                                                   {"truncated", t_.truncated}}.dump()
         << ",\n\"traceEvents\": [\n";
    metadata();
    gpu_work();
    host_work();
    memory_counters();
    out_ << "\n]}\n";
  }

 private:
  double us(std::uint64_t ns) const { return ns >= origin_ ? static_cast<double>(ns - origin_) / 1000.0 : 0.0; }
  double dur(std::uint64_t a, std::uint64_t b) const { return b > a ? static_cast<double>(b - a) / 1000.0 : 0.0; }
  std::string s(StringId id) const { return std::string(t_.str(id)); }

  void emit(const json& e) {
    if (!first_) out_ << ",\n";
    first_ = false;
    out_ << e.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  void name_process(std::int64_t pid, const std::string& name, std::int64_t sort) {
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", sort}}}});
  }

  void metadata() {
    std::map<std::int32_t, std::string> devices;
    for (const auto& d : t_.devices)
      if (d.id >= 0) devices[d.id] = s(d.name);  // a negative id is the host's
    auto note = [&](std::int32_t d) {
      if (d >= 0 && !devices.count(d)) devices[d] = "";
    };
    for (const auto& k : t_.kernels) note(k.device);
    for (const auto& m : t_.memcpys) note(m.device);
    for (const auto& m : t_.memsets) note(m.device);
    for (const auto& a : t_.allocs) note(a.device);
    name_process(kHostPid, t_.pid ? "host (pid " + std::to_string(t_.pid) + ")" : "host", 0);
    for (const auto& [id, name] : devices)
      name_process(device_pid(id), "GPU " + std::to_string(id) + (name.empty() ? "" : " " + name), 1 + std::int64_t{id});
    std::map<std::pair<std::int32_t, std::uint64_t>, std::string> streams;
    for (const auto& st : t_.streams) streams[{st.device, st.id}] = s(st.name);
    auto stream = [&](std::int32_t d, std::uint64_t id) {
      if (d >= 0 && !streams.count({d, id})) streams[{d, id}] = "stream " + std::to_string(id);
    };
    for (const auto& k : t_.kernels) stream(k.device, k.stream);
    for (const auto& m : t_.memcpys) stream(m.device, m.stream);
    for (const auto& m : t_.memsets) stream(m.device, m.stream);
    for (const auto& [key, name] : streams)
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", device_pid(key.first)}, {"tid", key.second}, {"args", {{"name", name}}}});
  }

  void gpu_work() {
    for (const auto& k : t_.kernels)
      emit({{"ph", "X"}, {"cat", "kernel"}, {"name", s(k.name)}, {"pid", device_pid(k.device)}, {"tid", k.stream},
            {"ts", us(k.start_ns)}, {"dur", dur(k.start_ns, k.end_ns)},
            {"args", {{"grid", {k.grid[0], k.grid[1], k.grid[2]}}, {"block", {k.block[0], k.block[1], k.block[2]}},
                      {"shared bytes", k.shared_bytes}, {"correlation", k.correlation}}}});
    for (const auto& m : t_.memcpys)
      emit({{"ph", "X"}, {"cat", "memcpy"},
            {"name", "Memcpy " + std::string(to_string(m.copy)) + " (" + std::string(to_string(m.src_kind)) + " -> " +
                         std::string(to_string(m.dst_kind)) + ")"},
            {"pid", device_pid(m.device)}, {"tid", m.stream}, {"ts", us(m.start_ns)}, {"dur", dur(m.start_ns, m.end_ns)},
            {"args", {{"bytes", m.bytes}, {"async", m.async}, {"correlation", m.correlation}}}});
    for (const auto& m : t_.memsets)
      emit({{"ph", "X"}, {"cat", "memset"}, {"name", "Memset (" + std::string(to_string(m.kind)) + ")"},
            {"pid", device_pid(m.device)}, {"tid", m.stream}, {"ts", us(m.start_ns)}, {"dur", dur(m.start_ns, m.end_ns)},
            {"args", {{"bytes", m.bytes}, {"value", m.value}, {"async", m.async}}}});
  }

  void host_work() {
    for (const auto& a : t_.api_calls)
      emit({{"ph", "X"}, {"cat", "api"}, {"name", s(a.name)}, {"pid", kHostPid}, {"tid", a.tid}, {"ts", us(a.start_ns)},
            {"dur", dur(a.start_ns, a.end_ns)}, {"args", {{"status", a.status}, {"correlation", a.correlation}}}});
    for (const auto& y : t_.syncs)
      emit({{"ph", "X"}, {"cat", "sync"}, {"name", "sync (" + std::string(to_string(y.kind)) + ")"}, {"pid", kHostPid},
            {"tid", y.tid}, {"ts", us(y.start_ns)}, {"dur", dur(y.start_ns, y.end_ns)},
            {"args", {{"stream", y.stream}, {"device", y.device}}}});
    for (const auto& a : t_.allocs)
      emit({{"ph", "i"}, {"s", "t"}, {"cat", "memory"}, {"name", "alloc"}, {"pid", kHostPid}, {"tid", a.tid}, {"ts", us(a.time_ns)},
            {"args", {{"addr", a.addr}, {"bytes", a.bytes}, {"kind", to_string(a.kind)}, {"device", a.device}}}});
    for (const auto& f : t_.frees)
      emit({{"ph", "i"}, {"s", "t"}, {"cat", "memory"}, {"name", "free"}, {"pid", kHostPid}, {"tid", f.tid}, {"ts", us(f.time_ns)},
            {"args", {{"addr", f.addr}, {"bytes", f.bytes}, {"device", f.device}}}});
    for (const auto& o : t_.ooms)
      emit({{"ph", "i"}, {"s", "p"}, {"cat", "error"}, {"name", "out of memory"}, {"pid", kHostPid}, {"tid", o.tid},
            {"ts", us(o.time_ns)}, {"args", {{"requested bytes", o.requested_bytes}, {"device", o.device}}}});
    for (const auto& f : t_.findings)
      emit({{"ph", "i"}, {"s", "p"}, {"cat", "finding"}, {"name", s(f.rule_id)}, {"pid", kHostPid}, {"tid", f.tid},
            {"ts", us(f.time_ns)}, {"args", {{"message", s(f.message)}}}});
    for (const auto& h : t_.host_accesses)
      emit({{"ph", "i"}, {"s", "t"}, {"cat", "host access"}, {"name", h.access == AccessKind::Read ? "host read" : "host write"},
            {"pid", kHostPid}, {"tid", h.tid}, {"ts", us(h.time_ns)}, {"args", {{"addr", h.addr}, {"bytes", h.bytes}}}});
  }

  // Live bytes per device, from allocations and frees (a free without a size
  // releases what was allocated at its address).
  void memory_counters() {
    struct Change {
      std::uint64_t t;
      std::int32_t device;
      std::uint64_t bytes;
      bool freed;
    };
    std::vector<Change> changes;
    std::vector<std::pair<std::uint64_t, const Free*>> frees;
    for (const auto& f : t_.frees) frees.emplace_back(f.time_ns, &f);
    std::unordered_map<std::uint64_t, std::uint64_t> live_size;  // addr -> bytes
    std::size_t fi = 0;
    std::vector<const Alloc*> allocs;
    for (const auto& a : t_.allocs) allocs.push_back(&a);
    std::stable_sort(allocs.begin(), allocs.end(), [](auto* a, auto* b) { return a->time_ns < b->time_ns; });
    std::stable_sort(frees.begin(), frees.end(), [](auto& a, auto& b) { return a.first < b.first; });
    auto apply_free = [&](const Free& f) {
      std::uint64_t bytes = f.bytes;
      if (auto it = live_size.find(f.addr); f.addr != 0 && it != live_size.end()) {
        if (bytes == 0) bytes = it->second;
        live_size.erase(it);
      }
      if (bytes) changes.push_back({f.time_ns, f.device, bytes, true});
    };
    for (const Alloc* a : allocs) {
      while (fi < frees.size() && frees[fi].first <= a->time_ns) apply_free(*frees[fi++].second);
      if (a->addr != 0) live_size[a->addr] = a->bytes;
      changes.push_back({a->time_ns, a->device, a->bytes, false});
    }
    while (fi < frees.size()) apply_free(*frees[fi++].second);
    // Sizes are the trace's: a sum past 2^64 stays at the top, a free of more
    // than is live leaves none.
    std::map<std::int32_t, std::uint64_t> live;
    for (const auto& c : changes) {
      std::uint64_t& v = live[c.device];
      if (c.freed)
        v = c.bytes >= v ? 0 : v - c.bytes;
      else
        v = c.bytes > std::numeric_limits<std::uint64_t>::max() - v ? std::numeric_limits<std::uint64_t>::max()
                                                                     : v + c.bytes;
      emit({{"ph", "C"}, {"name", "live memory"}, {"pid", device_pid(c.device)}, {"ts", us(c.t)}, {"args", {{"bytes", v}}}});
    }
    for (const auto& c : t_.memory_counters)
      emit({{"ph", "C"}, {"name", "allocator"}, {"pid", device_pid(c.device)}, {"ts", us(c.time_ns)},
            {"args", {{"allocated", c.allocated_bytes}, {"reserved", c.reserved_bytes}}}});
  }

  const Trace& t_;
  std::ostream& out_;
  std::uint64_t origin_;
  bool first_ = true;
};

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& out) { ChromeWriter(trace, out).write(); }

}  // namespace gpudiag
