// Reading PyTorch's distributed events from Kineto JSON: what the importer
// keeps of them (KinetoComms) as it meets them in the file.
#pragma once

#include <optional>
#include <string_view>

#include "gpudiag/trace.h"
#include "kineto_collectives.h"
#include "kineto_json.h"

namespace gpudiag::import {

class KinetoCommReader {
 public:
  KinetoCommReader(Trace& trace, KinetoComms& comms) : trace_(trace), comms_(comms) {}

  // Which event of the distributed layer a host range is, by its name.
  static std::optional<KinetoCommEvent::Kind> kind_of(std::string_view name);
  // A host range of that kind. Garbage in its args leaves what it says unsaid.
  void host_event(kineto_json::od::object& ev, KinetoCommEvent::Kind kind, std::string_view name);
  // An NCCL kernel the importer read as `k`, running `op`.
  void kernel(const Kernel& k, std::string_view op, kineto_json::od::object* args);

 private:
  static std::int64_t external_id(kineto_json::od::object& args);
  void record_fields(kineto_json::od::object& args, StringId& group, std::int64_t& seq, std::uint64_t& bytes);
  static std::uint64_t first_input_bytes(kineto_json::od::object& args);

  Trace& trace_;
  KinetoComms& comms_;
};

}  // namespace gpudiag::import
