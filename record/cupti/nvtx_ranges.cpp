#include "nvtx_ranges.h"

namespace gpudiag::cupti {

std::optional<rec::RangeEvent> MarkerRanges::add(const CUpti_ActivityMarker2& m, const Hooks& h) {
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    if (open_.size() >= kMaxOpen || m.timestamp == 0) return std::nullopt;
    // CUPTI names threads by their OS id once cuptiSetThreadIdType(SYSTEM)
    // was called (injection.cpp), as the recorder does.
    const std::uint32_t tid = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m.objectId.pt.threadId : 0;
    const rec::StringId name = m.name && *m.name && h.intern ? h.intern(m.name) : 0;
    open_[m.id] = Start{m.timestamp, name, tid};
    return std::nullopt;
  }
  if (!(m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END)) return std::nullopt;
  const auto it = open_.find(m.id);
  if (it == open_.end()) return std::nullopt;
  const Start s = it->second;
  open_.erase(it);
  if (s.name == 0 || m.timestamp <= s.time_ns) return std::nullopt;
  return rec::RangeEvent{.start_ns = s.time_ns, .end_ns = m.timestamp, .name = s.name, .tid = s.tid};
}

}  // namespace gpudiag::cupti
