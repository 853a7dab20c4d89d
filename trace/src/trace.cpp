// The Trace model's helpers: string table, stacks, extents, sorting.
#include <algorithm>
#include <type_traits>
#include <unordered_map>

#include "gpudiag/api_kinds.h"
#include "gpudiag/trace.h"

namespace gpudiag {

std::string_view to_string(TraceSource s) {
  switch (s) {
    case TraceSource::Gdtrace: return "gdtrace";
    case TraceSource::Kineto: return "kineto";
    case TraceSource::Nsys: return "nsys";
    case TraceSource::TorchSnapshot: return "torch-snapshot";
    case TraceSource::Memory: break;
  }
  return "memory";
}

StringTable::StringTable() { intern(std::string_view()); }

StringTable::StringTable(const StringTable& other) {
  for (const auto& s : other.strings_) {
    strings_.push_back(s);
    index_.emplace(strings_.back(), static_cast<StringId>(strings_.size() - 1));
  }
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) {
    StringTable copy(other);
    *this = std::move(copy);
  }
  return *this;
}

StringId StringTable::intern(std::string_view s) {
  if (!strings_.empty() && s.empty()) return 0;
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<StringId>(strings_.size() - 1);
  index_.emplace(strings_.back(), id);
  return id;
}

StringId StringTable::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? 0 : it->second;
}

StackId Trace::add_stack(Stack s) {
  stacks.push_back(std::move(s));
  return static_cast<StackId>(stacks.size() - 1);
}

const Stack& Trace::stack(StackId id) const {
  static const Stack empty;
  return id < stacks.size() ? stacks[id] : empty;
}

std::size_t Trace::event_count() const {
  std::size_t n = crashes.size();
  for_each_event_column([&](const auto& column) { n += column.size(); });
  return n;
}

namespace {

template <class F>
void for_each_time(const Trace& t, F&& f) {
  t.for_each_event_column([&](const auto& column) {
    for (const auto& e : column) f(start_of(e), end_of(e));
  });
  for (const auto& e : t.crashes) f(e.time_ns, e.time_ns);
}

// Whether an event starts where a trace that lacks its end is no longer whole.
auto past_whole_part(std::uint64_t complete_until_ns) {
  return [complete_until_ns](const auto& e) { return start_of(e) >= complete_until_ns; };
}

// Each thread's events arrive in time order and most traces have one
// recording thread: checking is one pass, a stable sort of millions is many.
template <class V>
void sort_column(V& v) {
  const auto earlier = [](const auto& a, const auto& b) { return start_of(a) < start_of(b); };
  if (!std::is_sorted(v.begin(), v.end(), earlier)) std::stable_sort(v.begin(), v.end(), earlier);
}

}  // namespace

std::uint64_t Trace::begin_ns() const {
  std::uint64_t lo = UINT64_MAX;
  for_each_time(*this, [&](std::uint64_t a, std::uint64_t) { lo = std::min(lo, a); });
  return lo == UINT64_MAX ? 0 : lo;
}

std::uint64_t Trace::end_ns() const {
  std::uint64_t hi = 0;
  for_each_time(*this, [&](std::uint64_t a, std::uint64_t b) { hi = std::max({hi, a, b}); });
  return hi;
}

Trace Trace::whole_part() const {
  Trace part = *this;
  if (!complete())
    part.for_each_event_column([&](auto& column) { std::erase_if(column, past_whole_part(complete_until_ns)); });
  return part;
}

Trace Trace::detailed_part() const {
  Trace part = *this;
  if (!bounded()) return part;
  part.for_each_event_column([&]<class Column>(Column& column) {
    using Event = typename Column::value_type;
    // Allocations and frees before it are a consistent set (those live
    // across the dropped part, and their frees), and the copy guard's
    // faults are all kept: the memory live when detail starts, and faults
    // with their stacks.
    if constexpr (std::is_same_v<Event, Alloc> || std::is_same_v<Event, Free>) return;
    std::erase_if(column, [&](const Event& e) {
      if constexpr (std::is_same_v<Event, HostAccess>)
        if (e.guarded_copy != 0) return false;
      return start_of(e) < detail_from_ns;
    });
  });
  part.part_detail_from_ns = detail_from_ns;
  part.detail_from_ns = 0;
  return part;
}

std::size_t Trace::events_past_whole_part() const {
  std::size_t n = 0;
  for_each_event_column([&](const auto& column) {
    n += static_cast<std::size_t>(std::count_if(column.begin(), column.end(), past_whole_part(complete_until_ns)));
  });
  return n;
}

void Trace::sort_by_time() {
  for_each_event_column([](auto& column) { sort_column(column); });
  std::stable_sort(crashes.begin(), crashes.end(), [](const Crash& a, const Crash& b) { return a.time_ns < b.time_ns; });
}

void Trace::join_syncs_with_their_calls() {
  // Keyed by the syncs' correlation ids only: a trace has far fewer syncs
  // than calls, and this runs on every load.
  struct Call {
    const ApiCall* call = nullptr;  // the first with the correlation id
    std::uint32_t tid = 0;          // the first such call's that names its thread
  };
  std::unordered_map<std::uint64_t, Call> calls;
  for (const Sync& s : syncs)
    if (s.correlation != 0) calls.emplace(s.correlation, Call{});
  if (calls.empty()) return;
  for (const ApiCall& a : api_calls)
    if (auto it = calls.find(a.correlation); it != calls.end()) {
      if (it->second.call == nullptr) it->second.call = &a;
      if (it->second.tid == 0) it->second.tid = a.tid;
    }
  std::erase_if(syncs, [&](Sync& s) {
    const auto it = calls.find(s.correlation);
    if (it == calls.end()) return false;
    if (it->second.tid != 0) s.tid = it->second.tid;
    const ApiCall* call = it->second.call;
    if (call == nullptr || s.kind == SyncKind::Query || !is_query_call(str(call->name))) return false;
    if (call->status == kCudaNotReady) return true;
    s.kind = SyncKind::Query;
    return false;
  });
}

std::string JobPlace::label() const {
  std::string s = "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
  if (!backend.empty()) s += " (" + backend + ")";
  return s;
}

bool Trace::is_launch(const ApiCall& call) const {
  return call.symbol != 0 || api_kind(str(call.name)) == ApiKind::Launch;
}

const DeviceDesc* Trace::device(std::int32_t id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

std::string Trace::device_label(std::int32_t id) const {
  if (id == kHostDevice) return "host";
  const DeviceDesc* d = device(id);
  const std::string_view name = d ? str(d->name) : std::string_view();
  std::string label = "device " + std::to_string(id);
  if (!name.empty()) label += " (" + std::string(name) + ")";
  return label;
}

}  // namespace gpudiag
