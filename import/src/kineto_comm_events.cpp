// Reading PyTorch's distributed events from Kineto JSON as the importer
// meets them: c10d's records and calls, gloo's runs, NCCL's annotations and
// kernels. kineto_collectives.cpp turns what is read into collectives.
#include "kineto_comm_events.h"

#include <cmath>

#include "collective_names.h"

namespace gpudiag::import {

using namespace kineto_json;  // od, found(), the field readers

std::optional<KinetoCommEvent::Kind> KinetoCommReader::kind_of(std::string_view name) {
  using Kind = KinetoCommEvent::Kind;
  if (name == "record_param_comms") return Kind::Record;
  if (name.starts_with("c10d::")) return Kind::Call;
  if (name.starts_with("gloo:")) return Kind::Run;
  if (name.starts_with("nccl:")) return Kind::Annotation;
  return std::nullopt;
}

// An event of PyTorch's distributed layer (kineto_collectives.cpp says
// which and how they make collectives). Garbage in its args leaves what
// it says unsaid.
void KinetoCommReader::host_event(od::object& ev, KinetoCommEvent::Kind kind, std::string_view name) {
  using Kind = KinetoCommEvent::Kind;
  KinetoCommEvent e{.kind = kind};
  e.tid = tid_of(number_field(ev, "tid"));
  e.begin_ns = micros_to_ns(number_field(ev, "ts"));
  const std::uint64_t dur = micros_to_ns(number_field(ev, "dur"));
  e.end_ns = dur > UINT64_MAX - e.begin_ns ? UINT64_MAX : e.begin_ns + dur;
  if (kind != Kind::Record) e.op = trace_.intern(collective_op(name));
  od::object args;
  if (args_of(ev, args)) {
    e.external_id = external_id(args);
    if (kind == Kind::Record) {
      od::value v;
      std::string_view collective;
      if (found(args.find_field_unordered("Collective name").get(v)) && found(v.get_string().get(collective))) {
        e.named = true;
        e.op = trace_.intern(collective_op(collective));
      }
      record_fields(args, e.group, e.seq, e.bytes);
      // Older PyTorch's records have only record_shapes' inputs.
      if (e.bytes == 0) e.bytes = first_input_bytes(args);
    } else if (kind != Kind::Call) {  // a call's first input is a list of tensors: no shape
      e.bytes = first_input_bytes(args);  // with record_shapes
    }
  }
  comms_.host.push_back(e);
}

std::int64_t KinetoCommReader::external_id(od::object& args) {
  const auto id = field(args, "External id");
  return id && std::isfinite(*id) && *id >= 0 && *id < 0x1p62 ? static_cast<std::int64_t>(*id) : -1;
}

// What record_param_comms says of a collective, and Kineto copies onto its
// kernels: its group, its sequence number in the group, and the bytes of
// its input ("In msg nelems" elements of "dtype").
void KinetoCommReader::record_fields(od::object& args, StringId& group, std::int64_t& seq, std::uint64_t& bytes) {
  const auto elements = field(args, "In msg nelems");
  const std::string_view dtype = str_field(args, "dtype");
  bytes = elements ? element_bytes(*elements, dtype) : 0;
  od::value v;
  if (found(args.find_field_unordered("Process Group Name").get(v))) {
    std::string_view text;
    if (found(v.get_string().get(text))) {
      group = trace_.intern(text);
    } else {  // a number in some versions
      const Number n = read_number(v);
      if (n.kind == Number::Kind::Int || n.kind == Number::Kind::Uint)
        group = trace_.intern(n.kind == Number::Kind::Int ? std::to_string(n.i) : std::to_string(n.u));
    }
  }
  auto s = field(args, "Seq");
  if (!s) s = field(args, "seq");
  seq = s && std::isfinite(*s) && *s >= 0 && *s < 0x1p62 ? static_cast<std::int64_t>(*s) : Collective::kNoSeq;
}

// Bytes of the first input as record_shapes gives it: "Input Dims"
// [[321271], ...] of "Input type" ["float", ...]; 0 when not said.
std::uint64_t KinetoCommReader::first_input_bytes(od::object& args) {
  double elements = -1;
  od::value value;
  od::array dims;
  if (found(args.find_field_unordered("Input Dims").get(value)) && found(value.get_array().get(dims))) {
    bool first = true;
    for (auto item : dims) {  // walked to the end, as dims() does
      od::value v;
      if (auto err = std::move(item).get(v)) throw InvalidJson{err};
      od::array shape;
      if (!found(v.get_array().get(shape))) {
        first = false;
        continue;
      }
      double product = 1;
      bool garbage = false;
      for (auto d : shape) {
        od::value dv;
        if (auto err = std::move(d).get(dv)) throw InvalidJson{err};
        const auto n = read_number(dv).as_double();
        if (n && std::isfinite(*n) && *n >= 0) product *= *n;
        else garbage = true;
      }
      if (first && !garbage) elements = product;
      first = false;
    }
  }
  std::string_view type;
  od::array types;
  if (found(args.find_field_unordered("Input type").get(value)) && found(value.get_array().get(types))) {
    bool first = true;
    for (auto item : types) {
      od::value v;
      if (auto err = std::move(item).get(v)) throw InvalidJson{err};
      std::string_view s;
      if (first && found(v.get_string().get(s))) type = s;
      first = false;
    }
  }
  return element_bytes(elements, type);
}


void KinetoCommReader::kernel(const Kernel& k, std::string_view op, od::object* args) {
  KinetoCommKernel c{.start_ns = k.start_ns, .end_ns = k.end_ns, .device = k.device, .stream = k.stream,
                             .correlation = k.correlation, .op = trace_.intern(op)};
  if (args) {
    // Kineto gives a kernel its own correlation id as "External id" when
    // it links it to no host event.
    c.external_id = external_id(*args);
    if (c.external_id >= 0 && static_cast<std::uint64_t>(c.external_id) == k.correlation) c.external_id = -1;
    od::value v;
    std::string_view collective;
    if (found(args->find_field_unordered("Collective name").get(v)) && found(v.get_string().get(collective)))
      if (const std::string_view named = collective_op(collective); !named.empty()) c.op = trace_.intern(named);
    record_fields(*args, c.group, c.seq, c.bytes);
  }
  comms_.kernels.push_back(c);
}

}  // namespace gpudiag::import
