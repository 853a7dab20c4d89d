// PyTorch profiler (Kineto) Chrome-trace JSON -> Trace. Understands the 2021
// category names (Kernel, Memcpy, Memset, Runtime) and today's (kernel,
// gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cuda_sync), and the
// "[memory]" instant events of the caching allocator.
#include <simdjson.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "file_bytes.h"
#include "gpudiag/trace_io.h"
#include "kineto_names.h"

namespace gpudiag {
namespace {

namespace dom = simdjson::dom;
using import::parse_memcpy_name;

// Some writers quote numbers ("12.5"); others put words where numbers go
// ("stream 7" as a tid). Same acceptance as std::stod (strtod: leading blanks,
// a numeric prefix, out of range refused) but without throwing: the older
// traces have a quoted tid on every GPU event, and an exception each costs
// microseconds of unwinding.
std::optional<double> quoted_number(std::string_view s) {
  char small[64];
  std::string large;
  const char* text = small;
  if (s.size() < sizeof small) {
    std::memcpy(small, s.data(), s.size());
    small[s.size()] = '\0';
  } else {
    large.assign(s);
    text = large.c_str();
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || errno == ERANGE) return std::nullopt;
  return v;
}

std::optional<double> number(dom::element e) {
  switch (e.type()) {
    case dom::element_type::INT64: return static_cast<double>(std::int64_t(e));
    case dom::element_type::UINT64: return static_cast<double>(std::uint64_t(e));
    case dom::element_type::DOUBLE: return double(e);
    case dom::element_type::STRING: return quoted_number(std::string_view(e));
    default: return std::nullopt;
  }
}

std::optional<double> field(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e)) return std::nullopt;
  return number(e);
}

std::int64_t int_field(dom::object o, std::string_view key, std::int64_t fallback) {
  auto v = field(o, key);
  return v && std::isfinite(*v) ? static_cast<std::int64_t>(*v) : fallback;
}

std::string_view str_field(dom::object o, std::string_view key) {
  std::string_view s;
  if (o.at_key(key).get(s)) return {};
  return s;
}

// Chrome-trace timestamps are microseconds (fractions carry nanoseconds).
// Integers are converted exactly; negative or absurd values become 0.
std::uint64_t micros_to_ns(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e)) return 0;
  if (e.type() == dom::element_type::UINT64) return std::uint64_t(e) * 1000u;
  if (e.type() == dom::element_type::INT64) {
    const std::int64_t v = e;
    return v > 0 ? static_cast<std::uint64_t>(v) * 1000u : 0;
  }
  auto v = number(e);
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > 1.8e16) return 0;
  return static_cast<std::uint64_t>(std::llround(*v * 1000.0));
}

std::uint32_t u32(std::int64_t v) { return v < 0 ? 0 : static_cast<std::uint32_t>(std::min<std::int64_t>(v, UINT32_MAX)); }

void dims(dom::object args, std::string_view key, std::uint32_t out[3]) {
  dom::array a;
  if (args.at_key(key).get(a)) return;
  std::size_t i = 0;
  for (dom::element v : a) {
    if (i == 3) break;
    auto n = number(v);
    out[i++] = n && std::isfinite(*n) ? u32(static_cast<std::int64_t>(*n)) : 0;
  }
}

// The "X" categories event() turns into events; every other one is skipped.
bool imported_category(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" || cat == "gpu_memset" ||
         cat == "Memset" || cat == "cuda_sync" || cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver";
}

class KinetoImporter {
 public:
  explicit KinetoImporter(const std::string& name) { trace_.source = TraceSource::Kineto, trace_.path = name; }

  // `json` must have kReadPadding bytes of spare capacity (file_bytes.h):
  // simdjson then parses it in place, with no padded copy.
  Trace run(const std::string& json) {
    static_assert(import::kReadPadding >= simdjson::SIMDJSON_PADDING);
    const bool padded = json.capacity() - json.size() >= simdjson::SIMDJSON_PADDING;
    dom::parser parser;
    dom::element root;
    if (auto err = parser.parse(json.data(), json.size(), !padded).get(root))
      throw TraceError(trace_.path + ": not valid JSON (" + simdjson::error_message(err) + ")");
    dom::array events;
    dom::object obj;
    if (root.get(obj) == simdjson::SUCCESS) {
      if (obj.at_key("traceEvents").get(events))
        throw TraceError(trace_.path + ": JSON but not a Chrome/Kineto trace (no \"traceEvents\" array)");
      read_devices(obj);
    } else if (root.get(events) != simdjson::SUCCESS) {
      throw TraceError(trace_.path + ": JSON but not a Chrome/Kineto trace (neither an object with \"traceEvents\" nor an array)");
    }
    for (dom::element e : events) {
      dom::object ev;
      if (e.get(ev)) continue;  // tolerate stray non-objects, as chrome://tracing does
      event(ev);
    }
    finish();
    return std::move(trace_);
  }

 private:
  void read_devices(dom::object root) {
    dom::array props;
    if (root.at_key("deviceProperties").get(props)) return;
    for (dom::element p : props) {
      dom::object o;
      if (p.get(o)) continue;
      trace_.devices.push_back({static_cast<std::int32_t>(int_field(o, "id", 0)), trace_.intern(str_field(o, "name")),
                                static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_field(o, "totalGlobalMem", 0)))});
    }
  }

  void event(dom::object ev) {
    const std::string_view ph = str_field(ev, "ph");
    const std::string_view name = str_field(ev, "name");
    if (ph == "i" || ph == "I") {
      if (name == "[memory]") memory(ev);
      return;
    }
    if (ph != "X") return;
    std::string_view cat = str_field(ev, "cat");
    // Most complete events are CPU ops (cat "Operator", "cpu_op", ...) with
    // long args: leave them before looking up any field they would not use.
    if (!imported_category(cat)) return;
    dom::object args;
    const bool has_args = ev.at_key("args").get(args) == simdjson::SUCCESS;
    if (!has_args) args = dom::object();
    const std::uint64_t start = micros_to_ns(ev, "ts");
    const std::uint64_t end = start + micros_to_ns(ev, "dur");
    auto iarg = [&](std::string_view k, std::int64_t d) { return has_args ? int_field(args, k, d) : d; };
    const auto device = static_cast<std::int32_t>(iarg("device", kHostDevice));
    const auto stream = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("stream", 0)));
    const auto corr = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("correlation", 0)));
    const auto tid = host_tid(ev);

    if (cat == "kernel" || cat == "Kernel") {
      Kernel k{.start_ns = start, .end_ns = end, .name = trace_.intern(name), .device = device, .stream = stream, .correlation = corr};
      if (has_args) {
        dims(args, "grid", k.grid);
        dims(args, "block", k.block);
        k.shared_bytes = u32(iarg("shared memory", 0));
      }
      trace_.kernels.push_back(k);
      note_stream(device, stream);
    } else if (cat == "gpu_memcpy" || cat == "Memcpy") {
      const auto d = parse_memcpy_name(name);
      trace_.memcpys.push_back({.start_ns = start, .end_ns = end, .bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("bytes", 0))),
                                .copy = d.copy, .src_kind = d.src, .dst_kind = d.dst, .device = device,
                                .peer_device = static_cast<std::int32_t>(iarg("dst device", kHostDevice)), .stream = stream,
                                .correlation = corr});
      note_stream(device, stream);
    } else if (cat == "gpu_memset" || cat == "Memset") {
      trace_.memsets.push_back({.start_ns = start, .end_ns = end, .bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("bytes", 0))),
                                .kind = import::parse_memset_name(name), .device = device, .stream = stream, .correlation = corr});
      note_stream(device, stream);
    } else if (cat == "cuda_sync") {
      const std::string_view kind_name = has_args ? str_field(args, "cuda_sync_kind") : std::string_view();
      const auto kind = import::parse_sync_name(kind_name.empty() ? name : kind_name).value_or(SyncKind::Unknown);
      trace_.syncs.push_back({.start_ns = start, .end_ns = end, .kind = kind, .device = device, .stream = stream,
                              .event = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("event", 0))), .correlation = corr});
      has_gpu_sync_ = true;
    } else if (cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver") {
      const ApiDomain domain = cat == "cuda_driver" ? ApiDomain::Driver : ApiDomain::Runtime;
      trace_.api_calls.push_back({.start_ns = start, .end_ns = end, .name = trace_.intern(name), .domain = domain,
                                  .tid = tid, .correlation = corr});
    }
  }

  void memory(dom::object ev) {
    dom::object args;
    if (ev.at_key("args").get(args)) return;
    const std::uint64_t t = micros_to_ns(ev, "ts");
    const std::int64_t bytes = int_field(args, "Bytes", 0);
    const std::int64_t type = int_field(args, "Device Type", 0);
    const auto device = static_cast<std::int32_t>(type == 0 ? kHostDevice : int_field(args, "Device Id", 0));
    const MemKind kind = type == 0 ? MemKind::Pageable : MemKind::Device;
    const auto addr = static_cast<std::uint64_t>(int_field(args, "Addr", 0));
    const std::uint32_t tid = host_tid(ev);
    if (bytes > 0)
      trace_.allocs.push_back({.time_ns = t, .addr = addr, .bytes = static_cast<std::uint64_t>(bytes), .kind = kind, .device = device, .tid = tid});
    else if (bytes < 0)
      trace_.frees.push_back({.time_ns = t, .addr = addr, .bytes = static_cast<std::uint64_t>(-bytes), .kind = kind, .device = device, .tid = tid});
    const auto allocated = field(args, "Total Allocated"), reserved = field(args, "Total Reserved");
    if (allocated || reserved)
      trace_.memory_counters.push_back({t, device, allocated ? static_cast<std::uint64_t>(std::max(0.0, *allocated)) : 0,
                                        reserved ? static_cast<std::uint64_t>(std::max(0.0, *reserved)) : 0});
  }

  std::uint32_t host_tid(dom::object ev) {
    dom::element e;
    if (ev.at_key("tid").get(e)) return 0;
    if (auto n = number(e); n && std::isfinite(*n) && *n >= 0) return u32(static_cast<std::int64_t>(*n));
    return 0;
  }

  void note_stream(std::int32_t device, std::uint64_t stream) {
    if (streams_.emplace(std::make_pair(device, stream), true).second)
      trace_.streams.push_back({device, stream, trace_.intern("stream " + std::to_string(stream))});
  }

  void finish() {
    // Which API call launched each copy tells whether it was async.
    std::unordered_map<std::uint64_t, StringId> api_by_corr;
    for (const auto& a : trace_.api_calls)
      if (a.correlation != 0) api_by_corr.emplace(a.correlation, a.name);
    for (auto& m : trace_.memcpys) {
      auto it = api_by_corr.find(m.correlation);
      if (it != api_by_corr.end()) m.async = trace_.str(it->second).find("Async") != std::string_view::npos;
    }
    for (auto& m : trace_.memsets) {
      auto it = api_by_corr.find(m.correlation);
      if (it != api_by_corr.end()) m.async = trace_.str(it->second).find("Async") != std::string_view::npos;
    }
    // Older traces have no cuda_sync events: the blocking runtime calls are the syncs.
    if (!has_gpu_sync_) {
      for (const auto& a : trace_.api_calls)
        if (auto k = import::sync_of_runtime_call(trace_.str(a.name)))
          trace_.syncs.push_back({.start_ns = a.start_ns, .end_ns = a.end_ns, .kind = *k, .tid = a.tid, .correlation = a.correlation});
    }
    trace_.sort_by_time();
  }

  Trace trace_;
  bool has_gpu_sync_ = false;
  std::map<std::pair<std::int32_t, std::uint64_t>, bool> streams_;
};

}  // namespace

Trace import_kineto_bytes(std::string_view json, const std::string& name) {
  const std::string text = import::maybe_gunzip(json, name);
  return KinetoImporter(name).run(text);
}

Trace import_kineto(const std::string& path) {
  return KinetoImporter(path).run(import::read_file_bytes(path));
}

}  // namespace gpudiag
