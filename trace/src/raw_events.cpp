#include "raw_events.h"

#include <type_traits>

#include "event_codec.h"

namespace gpudiag::gdtrace {

void add_event(Trace& trace, const FileIds& ids, const RawEvent& e) {
  const auto kind = static_cast<EventKind>(e.kind);
  if (kind == EventKind::Device) {
    const auto d = decode<DeviceDesc>(e, ids);
    if (trace.device(d.id) == nullptr) trace.devices.push_back(d);
    return;
  }
  if (kind == EventKind::Stream) {
    trace.streams.push_back(decode<StreamDesc>(e, ids));
    return;
  }
  trace.for_each_event_column([&](auto& column) {
    using Event = typename std::decay_t<decltype(column)>::value_type;
    if (kind == Event::event_kind) column.push_back(decode<Event>(e, ids));
  });
}

}  // namespace gpudiag::gdtrace
