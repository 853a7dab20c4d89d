#include "stream_orderings.h"

#include <algorithm>

#include "gpudiag/api_kinds.h"

namespace gpudiag {

bool is_gpu_pointer(const KernelArg& a) {
  return a.memory == MemKind::Device || a.memory == MemKind::Pinned || a.memory == MemKind::Managed;
}

bool any_in(const std::vector<std::uint64_t>& sorted, std::uint64_t from, std::uint64_t to) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), from);
  return it != sorted.end() && *it <= to;
}

std::unordered_set<std::uint64_t> default_streams(const Trace& t) {
  std::unordered_set<std::uint64_t> out, worked;
  for (const Memcpy& c : t.memcpys) {
    worked.insert(c.stream);
    if (!c.async) out.insert(c.stream);
  }
  for (const Memset& m : t.memsets) {
    worked.insert(m.stream);
    if (!m.async) out.insert(m.stream);
  }
  for (const Kernel& k : t.kernels) worked.insert(k.stream);
  for (const KernelArg& a : t.kernel_args) worked.insert(a.stream);
  for (const Free& f : t.frees)
    if (f.stream != 0 && !worked.count(f.stream)) out.insert(f.stream);
  return out;
}

Orderings::Orderings(const Trace& t) : default_(default_streams(t)) {
  std::unordered_set<std::uint64_t> described;  // correlations of calls with a Sync record
  for (const Sync& s : t.syncs) {
    if (s.correlation != 0) described.insert(s.correlation);
    switch (s.kind) {
      case SyncKind::Device:
      case SyncKind::Context:
        (s.device == kHostDevice ? any_ : device_[s.device]).push_back(s.start_ns);
        break;
      case SyncKind::Stream: (s.stream == 0 ? any_ : stream_[s.stream]).push_back(s.start_ns); break;
      case SyncKind::StreamWaitEvent: (s.stream == 0 ? any_ : waited_[s.stream]).push_back(s.start_ns); break;
      // The host learnt that the queried stream, or the one the event was recorded on, had done its work up to then.
      case SyncKind::Query: (s.stream == 0 ? any_ : stream_[s.stream]).push_back(s.start_ns); break;
      case SyncKind::Event:
      case SyncKind::Unknown: any_.push_back(s.start_ns); break;
    }
  }
  for (const ApiCall& a : t.api_calls)
    if (a.status == 0 && api_kind(t.str(a.name)) == ApiKind::Sync && !described.count(a.correlation))
      any_.push_back(a.start_ns);
  std::sort(any_.begin(), any_.end());
  const auto sort_each = [](auto& by) {
    for (auto& [key, times] : by) std::sort(times.begin(), times.end());
  };
  sort_each(device_), sort_each(stream_), sort_each(waited_);
}

}  // namespace gpudiag
