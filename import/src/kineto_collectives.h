// The collectives of a Kineto trace, from what the importer keeps of the
// events that tell of them as it reads the file.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpudiag/trace.h"

namespace gpudiag::import {

// A host event of PyTorch's distributed layer.
struct KinetoCommEvent {
  enum class Kind : std::uint8_t {
    Record,      // record_param_comms: c10d's record of a collective, with its sizes and group
    Call,        // c10d::allreduce_ ...: the op the program called
    Run,         // gloo:all_reduce ...: gloo's worker running the collective
    Annotation,  // nccl:all_reduce ...: inside a record, naming it
  };
  Kind kind = Kind::Record;
  StringId op = 0;     // collective_op() of its name (a Record's "Collective name"); 0: none
  bool named = false;  // a Record that has a "Collective name", collective or not ("wait")
  StringId group = 0;
  std::int64_t seq = Collective::kNoSeq;
  std::uint64_t bytes = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;
  std::uint32_t tid = 0;
  std::int64_t external_id = -1;  // -1: none
};

// An NCCL kernel. Kineto copies its record's fields onto a kernel launched
// under a record_param_comms.
struct KinetoCommKernel {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::int32_t device = kHostDevice;
  std::uint64_t stream = 0, correlation = 0;
  std::int64_t external_id = -1;
  StringId op = 0;  // from its "Collective name", else its own name
  StringId group = 0;
  std::int64_t seq = Collective::kNoSeq;
  std::uint64_t bytes = 0;
};

struct KinetoComms {
  std::vector<KinetoCommEvent> host;
  std::vector<KinetoCommKernel> kernels;
  // Kineto's "Record Window End": when the profiler stopped.
  std::optional<std::uint64_t> window_end_ns;
};

// Fills trace.collectives (its API calls must be read: they tie kernels to
// the thread that launched them).
void add_kineto_collectives(Trace& trace, const KinetoComms& comms);

}  // namespace gpudiag::import
