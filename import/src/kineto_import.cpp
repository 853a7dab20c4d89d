// PyTorch profiler (Kineto) Chrome-trace JSON -> Trace. Understands the 2021
// category names (Kernel, Memcpy, Memset, Runtime) and today's (kernel,
// gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cuda_sync), and the
// "[memory]" and "[OutOfMemory]" instant events of the caching allocator.
#include <simdjson.h>

#include <map>
#include <unordered_map>
#include <utility>

#include "collective_names.h"
#include "file_bytes.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/range_names.h"
#include "gpudiag/trace_io.h"
#include "kineto_collectives.h"
#include "kineto_comm_events.h"
#include "kineto_json.h"
#include "kineto_names.h"

namespace gpudiag {
namespace {

using import::parse_memcpy_name;
using namespace import::kineto_json;  // od, found(), the field readers

// The "X" categories event() turns into events, under today's names and the
// 2021 ones; every other category is Skipped.
enum class Category { Kernel, Memcpy, Memset, Sync, Runtime, Driver, HostRange, Skipped };

Category category_of(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return Category::Kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Category::Memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Category::Memset;
  if (cat == "cuda_sync") return Category::Sync;
  if (cat == "cuda_runtime" || cat == "Runtime") return Category::Runtime;
  if (cat == "cuda_driver") return Category::Driver;
  // The profiler's steps: "user_annotation" now, "Operator"/"cpu_op" in older traces.
  if (cat == "user_annotation" || cat == "Operator" || cat == "cpu_op") return Category::HostRange;
  return Category::Skipped;
}

// simdjson's on-demand API: the document is validated as it is walked, and
// only the fields an event needs are parsed; CPU-op events (most of a
// PyTorch trace) are skipped after three string fields.
class KinetoImporter {
 public:
  explicit KinetoImporter(const std::string& name) { trace_.source = TraceSource::Kineto, trace_.path = name; }

  // `json` must have kReadPadding bytes of spare capacity (file_bytes.h):
  // simdjson then parses it in place, with no padded copy.
  Trace run(const std::string& json) {
    try {
      return walk(json);
    } catch (const InvalidJson& e) {
      check(e.code);
      throw;  // not reached: check() throws for every error
    }
  }

 private:
  Trace walk(const std::string& json) {
    static_assert(import::kReadPadding >= simdjson::SIMDJSON_PADDING);
    simdjson::padded_string copy;
    simdjson::padded_string_view view(json.data(), json.size(), json.capacity());
    if (json.capacity() - json.size() < simdjson::SIMDJSON_PADDING) {
      copy = simdjson::padded_string(json);
      view = simdjson::padded_string_view(copy);
    }
    od::parser parser;
    od::document doc;
    check(parser.iterate(view).get(doc));
    od::json_type type;
    check(doc.type().get(type));
    if (type == od::json_type::object) {
      od::object root;
      check(doc.get_object().get(root));
      bool found = false, kineto_keys = false;
      std::size_t elements = 0;
      for (auto f : root) {
        od::field field;
        check(std::move(f).get(field));
        // Raw (escaped) key: the names looked for have nothing to escape.
        if (field.key() == "traceEvents") {
          od::array events;
          const auto err = field.value().get_array().get(events);
          if (err == simdjson::INCORRECT_TYPE) not_a_trace("no \"traceEvents\" array");
          check(err);
          elements += read_events(events);
          found = true;
        } else if (field.key() == "deviceProperties") {
          read_devices(field.value());
          kineto_keys = true;
        } else if (field.key() == "distributedInfo") {
          read_job_place(field.value());
          kineto_keys = true;
        } else if (field.key() == "host_name") {
          std::string_view host;
          if (import::kineto_json::found(field.value().get_string().get(host))) host_ = std::string(host);
          kineto_keys = true;
        } else if (field.key() == "baseTimeNanoseconds") {
          base_time_ns_ = base_time(read_number(field.value()));
          kineto_keys = true;
        } else if (field.key() == "schemaVersion" || field.key() == "traceName") {
          kineto_keys = true;
        }
      }
      if (!found) not_a_trace("no \"traceEvents\" array");
      // A profiler run that recorded nothing still writes Kineto's own keys
      // beside an empty list: that is an empty trace, not some other JSON.
      if (!saw_event_ && !(elements == 0 && kineto_keys)) not_a_trace(kNoEvents);
    } else if (type == od::json_type::array) {
      od::array events;
      check(doc.get_array().get(events));
      read_events(events);
      if (!saw_event_) not_a_trace(kNoEvents);
    } else if (type == od::json_type::string) {
      std::string_view s;  // a malformed string is invalid JSON, a valid one is not a trace
      check(doc.get_string().get(s));
      not_a_trace("neither an object with \"traceEvents\" nor an array");
    } else {
      not_a_trace("neither an object with \"traceEvents\" nor an array");
    }
    finish();
    return std::move(trace_);
  }

  // Errors met while walking the document mean it is not valid JSON.
  void check(simdjson::error_code err) {
    if (err) throw TraceError(trace_.path + ": not valid JSON (" + simdjson::error_message(err) + ")");
  }
  [[noreturn]] void not_a_trace(const char* why) {
    throw TraceError(trace_.path + ": JSON, but not a Chrome/Kineto trace (" + why + ")");
  }
  static constexpr const char* kNoEvents = "no trace events with a \"ph\" field";

  // Returns the number of elements, events or not.
  std::size_t read_events(od::array events) {
    std::size_t elements = 0;
    for (auto item : events) {
      od::value v;
      check(std::move(item).get(v));
      ++elements;
      od::object ev;
      if (!found(v.get_object().get(ev))) continue;  // tolerate stray non-objects, as chrome://tracing does
      event(ev);
    }
    return elements;
  }

  void read_devices(od::value value) {
    od::array props;
    if (!found(value.get_array().get(props))) return;
    for (auto item : props) {
      od::value v;
      check(std::move(item).get(v));
      od::object o;
      if (!found(v.get_object().get(o))) continue;
      const auto id = static_cast<std::int32_t>(int_field(o, "id", 0));
      const StringId name = trace_.intern(str_field(o, "name"));
      const auto memory = static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_field(o, "totalGlobalMem", 0)));
      trace_.devices.push_back({id, name, memory});
    }
  }

  // Kineto's distributedInfo: {"backend": "nccl", "rank": 3, "world_size": 8,
  // "pg_count": ..., "pg_config": [...]}. A single-process run writes only
  // {"rank": 0}: no job is said without a world size.
  void read_job_place(od::value value) {
    od::object o;
    if (!found(value.get_object().get(o))) return;
    JobPlace job;
    job.backend = std::string(str_field(o, "backend"));
    job.rank = static_cast<std::int32_t>(std::clamp<std::int64_t>(int_field(o, "rank", -1), -1, 1 << 30));
    job.world_size = static_cast<std::int32_t>(std::clamp<std::int64_t>(int_field(o, "world_size", 0), 0, 1 << 30));
    if (job.rank >= job.world_size) job.rank = -1;  // a rank outside its world is no place in it
    trace_.job = std::move(job);
  }

  // Kineto's "baseTimeNanoseconds": every "ts" counts microseconds from it
  // (libkineto, output_json: transToRelativeTime), so that a double holds
  // them to the nanosecond. It is no second reading of a clock: Kineto takes
  // the system clock once, when the profiler is first set up, and floors it
  // to its three-month step (7889238 s; the real trace's 1790857026 s is 227
  // of them), then writes each time as integer nanoseconds past it ("us.nnn").
  // So ts * 1000 + base is the system clock's time of the event as the
  // profiler took it, exactly: the offset adds no uncertainty of its own.
  // Only an integer of nanoseconds is a base.
  static std::optional<std::int64_t> base_time(const Number& n) {
    if (n.kind == Number::Kind::Int && n.i >= 0) return n.i;
    if (n.kind == Number::Kind::Uint && n.u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(n.u);
    return std::nullopt;
  }

  // Fields are looked up in Kineto's order (ph, cat, name, pid, tid, ts,
  // dur, args), each value read at once: an on-demand value can be read once.
  void event(od::object& ev) {
    const std::string_view ph = str_field(ev, "ph");
    // Every Chrome trace event has a phase; an array of objects none of
    // which has one is some other JSON (see walk()).
    if (ph.empty()) return;
    saw_event_ = true;
    const bool instant = ph == "i" || ph == "I";
    if (!instant && ph != "X") return;
    const Category category = instant ? Category::Skipped : category_of(str_field(ev, "cat"));
    // Most complete events are CPU ops (cat "Operator", "cpu_op", ...) with
    // long args: leave them before looking up any field they would not use.
    if (!instant && category == Category::Skipped) return;
    // Of the host ranges only the profiler's steps, which give the
    // iterations, and those of PyTorch's distributed layer, which give the
    // collectives: told from the raw text, since an operator's name is not
    // ours to validate (a bad escape in one must not reject the trace).
    if (category == Category::HostRange) {
      const std::string_view host_name = plain_name(ev);
      // The steps, and the waits for data within them (the DataLoader's, or
      // the program's own range): how long each step waited for its data,
      // which a job's straggler is often about.
      if (host_name.starts_with("ProfilerStep#") || is_data_loading_range(host_name)) host_range(ev, host_name);
      else if (const auto kind = import::KinetoCommReader::kind_of(host_name)) comms_reader_.host_event(ev, *kind, host_name);
      return;
    }
    const std::string_view name = str_field(ev, "name");
    if (instant) {
      if (name == "[memory]") memory(ev);
      else if (name == "[OutOfMemory]") out_of_memory(ev);
      else if (name == "Record Window End") window_end(ev);
      return;
    }
    const std::uint32_t tid = tid_of(number_field(ev, "tid"));
    const std::uint64_t start = micros_to_ns(number_field(ev, "ts"));
    const std::uint64_t end = start + micros_to_ns(number_field(ev, "dur"));
    od::value args_value;
    od::object args;
    const bool has_args = found(ev.find_field_unordered("args").get(args_value)) && found(args_value.get_object().get(args));
    auto iarg = [&](std::string_view k, std::int64_t d) { return has_args ? int_field(args, k, d) : d; };
    const auto device = static_cast<std::int32_t>(iarg("device", kHostDevice));
    const auto stream = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("stream", 0)));
    const auto corr = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("correlation", 0)));

    if (category == Category::Kernel) {
      Kernel k{.start_ns = start, .end_ns = end, .name = trace_.intern(name), .device = device, .stream = stream, .correlation = corr};
      if (has_args) {
        dims(args, "grid", k.grid);
        dims(args, "block", k.block);
        k.shared_bytes = u32(iarg("shared memory", 0));
      }
      trace_.kernels.push_back(k);
      note_stream(device, stream);
      if (const auto op = import::nccl_kernel_op(name)) comms_reader_.kernel(k, *op, has_args ? &args : nullptr);
    } else if (category == Category::Memcpy) {
      const auto d = parse_memcpy_name(name);
      const auto bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("bytes", 0)));
      trace_.memcpys.push_back({.start_ns = start, .end_ns = end, .bytes = bytes, .copy = d.copy, .src_kind = d.src, .dst_kind = d.dst,
                                .device = device, .peer_device = static_cast<std::int32_t>(iarg("dst device", kHostDevice)),
                                .stream = stream, .correlation = corr});
      note_stream(device, stream);
    } else if (category == Category::Memset) {
      trace_.memsets.push_back({.start_ns = start, .end_ns = end, .bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("bytes", 0))),
                                .kind = import::parse_memset_name(name), .device = device, .stream = stream, .correlation = corr});
      note_stream(device, stream);
    } else if (category == Category::Sync) {
      const std::string_view kind_name = has_args ? str_field(args, "cuda_sync_kind") : std::string_view();
      const auto kind = import::parse_sync_name(kind_name.empty() ? name : kind_name).value_or(SyncKind::Unknown);
      trace_.syncs.push_back({.start_ns = start, .end_ns = end, .kind = kind, .device = device, .stream = stream,
                              .event = static_cast<std::uint64_t>(std::max<std::int64_t>(0, iarg("event", 0))), .correlation = corr});
      has_gpu_sync_ = true;
    } else if (category == Category::Runtime || category == Category::Driver) {
      const ApiDomain domain = category == Category::Driver ? ApiDomain::Driver : ApiDomain::Runtime;
      trace_.api_calls.push_back({.start_ns = start, .end_ns = end, .name = trace_.intern(name), .domain = domain,
                                  .tid = tid, .correlation = corr});
    }
  }

  // The event's name read from its raw JSON text when it is short and
  // escapes nothing (the names looked for never do), else "".
  static std::string_view plain_name(od::object& ev) {
    od::value v;
    simdjson::ondemand::raw_json_string raw;
    if (!found(ev.find_field_unordered("name").get(v)) || !found(v.get_raw_json_string().get(raw))) return {};
    const char* text = raw.raw();
    std::size_t n = 0;
    while (n < 64 && text[n] != '"' && text[n] != '\\' && text[n] != '\0') ++n;
    return text[n] == '"' ? std::string_view(text, n) : std::string_view();
  }

  // When the profiler stopped: what runs on past it is unfinished in the trace.
  void window_end(od::object& ev) {
    if (const std::uint64_t t = micros_to_ns(number_field(ev, "ts")); t > 0) comms_.window_end_ns = t;
  }


  void host_range(od::object& ev, std::string_view name) {
    const std::uint64_t start = micros_to_ns(number_field(ev, "ts"));
    trace_.ranges.push_back({.start_ns = start, .end_ns = start + micros_to_ns(number_field(ev, "dur")),
                             .name = trace_.intern(name), .tid = tid_of(number_field(ev, "tid"))});
  }

  void memory(od::object& ev) {
    const std::uint32_t tid = tid_of(number_field(ev, "tid"));
    const std::uint64_t t = micros_to_ns(number_field(ev, "ts"));
    od::object args;
    if (!args_of(ev, args)) return;
    const std::int64_t bytes = int_field(args, "Bytes", 0);
    const auto [device, host] = allocator_place(args);
    const MemKind kind = host ? MemKind::Pageable : MemKind::Device;
    const auto addr = static_cast<std::uint64_t>(int_field(args, "Addr", 0));
    if (bytes > 0)
      trace_.allocs.push_back({.time_ns = t, .addr = addr, .bytes = static_cast<std::uint64_t>(bytes), .kind = kind, .device = device, .tid = tid});
    else if (bytes < 0)
      trace_.frees.push_back({.time_ns = t, .addr = addr, .bytes = static_cast<std::uint64_t>(-bytes), .kind = kind, .device = device, .tid = tid});
    totals(args, t, device);
  }

  // Where an allocator event happened: "Device Type" 0 is the CPU (the host).
  struct AllocatorPlace {
    std::int32_t device;
    bool host;
  };
  static AllocatorPlace allocator_place(od::object& args) {
    if (int_field(args, "Device Type", 0) == 0) return {kHostDevice, true};
    return {static_cast<std::int32_t>(int_field(args, "Device Id", 0)), false};
  }

  // PyTorch's allocator totals after the event, when it wrote them.
  void totals(od::object& args, std::uint64_t t, std::int32_t device) {
    const auto allocated = field(args, "Total Allocated"), reserved = field(args, "Total Reserved");
    if (allocated || reserved)
      trace_.memory_counters.push_back({t, device, allocated ? static_cast<std::uint64_t>(std::max(0.0, *allocated)) : 0,
                                        reserved ? static_cast<std::uint64_t>(std::max(0.0, *reserved)) : 0});
  }

  // A failed allocation: "Bytes" is the request, the totals are the
  // allocator's state when it failed (reserved minus allocated tells cache
  // or fragmentation from real use). Without args the failure is still kept.
  void out_of_memory(od::object& ev) {
    const std::uint32_t tid = tid_of(number_field(ev, "tid"));
    const std::uint64_t t = micros_to_ns(number_field(ev, "ts"));
    od::object args;
    if (!args_of(ev, args)) {
      trace_.ooms.push_back({.time_ns = t, .tid = tid});
      return;
    }
    const std::int32_t device = allocator_place(args).device;
    const auto bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_field(args, "Bytes", 0)));
    trace_.ooms.push_back({.time_ns = t, .requested_bytes = bytes, .device = device, .tid = tid});
    totals(args, t, device);
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
    trace_.join_syncs_with_their_calls();
    trace_.sort_by_time();
    if (!host_.empty()) trace_.job.host = host_;
    if (base_time_ns_) {
      trace_.job.epoch_offset_known = true;
      trace_.job.epoch_offset_ns = *base_time_ns_;
      trace_.job.epoch_offset_uncertainty_ns = 0;  // see base_time()
    }
    import::add_kineto_collectives(trace_, comms_);
  }

  Trace trace_;
  bool has_gpu_sync_ = false;
  bool saw_event_ = false;  // some element had a "ph": this is a Chrome trace
  std::string host_;
  std::optional<std::int64_t> base_time_ns_;
  import::KinetoComms comms_;
  import::KinetoCommReader comms_reader_{trace_, comms_};
  std::map<std::pair<std::int32_t, std::uint64_t>, bool> streams_;
};

}  // namespace

Trace import_kineto_bytes(std::string_view json, const std::string& name) {
  const std::string text = import::maybe_gunzip(json, name);
  return KinetoImporter(name).run(text);
}

Trace import_kineto(const std::string& path) { return import::import_kineto_text(import::read_file_bytes(path), path); }

Trace import::import_kineto_text(std::string text, const std::string& name) { return KinetoImporter(name).run(std::move(text)); }

}  // namespace gpudiag
