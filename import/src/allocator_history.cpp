// PyTorch's allocator history, as `gpudiag trace` records it beside a Python
// program's trace: the blocks of torch.cuda.memory._snapshot()'s
// device_traces, on the trace's clock and streams.
#include "gpudiag/import/allocator_history.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpudiag::import {
namespace {

using nlohmann::json;

// The history's stacks (frame numbers into its frames, innermost first) as
// the trace's, each made once.
class Stacks {
 public:
  Stacks(Trace& trace, const json& doc) : trace_(trace), frames_(doc.at("frames")), stacks_(doc.at("stacks")) {
    made_.assign(stacks_.size(), kNotMade);
  }

  StackId of(const json& entry) {
    const auto number = entry.at("stack").get<std::size_t>();
    if (number >= stacks_.size()) throw std::runtime_error(fmt::format("stack {} is not in its table", number));
    if (made_[number] != kNotMade) return made_[number];
    Stack stack;
    for (const json& f : stacks_[number]) {
      const json& frame = frames_.at(f.get<std::size_t>());  // [filename, line, function]
      stack.frames.push_back({.function = trace_.intern(frame.at(2).get<std::string>()),
                              .file = trace_.intern(frame.at(0).get<std::string>()),
                              .line = frame.at(1).get<std::uint32_t>()});
    }
    return made_[number] = stack.frames.empty() ? 0 : trace_.add_stack(stack);
  }

 private:
  static constexpr StackId kNotMade = ~StackId{0};
  Trace& trace_;
  const json& frames_;
  const json& stacks_;
  std::vector<StackId> made_;
};

void read_history(Trace& trace, const json& doc) {
  if (!doc.is_object() || doc.value("format", std::string()) != kAllocatorHistoryFormat)
    throw std::runtime_error("not a gpudiag allocator history");
  // Nanoseconds since boot or 1970, and microseconds since 1970, fit in
  // 2^62 and 2^53: a value beyond is no time (and would overflow below).
  constexpr std::int64_t kLatestNs = std::int64_t{1} << 62, kLatestUs = std::int64_t{1} << 53;
  const json& clock = doc.at("clock");
  const auto clock_ns = [&clock](const char* name) {
    const auto ns = clock.at(name).get<std::int64_t>();
    if (ns < 0 || ns > kLatestNs) throw std::runtime_error(fmt::format("its {} is no time", name));
    return ns;
  };
  // time_us is on the realtime clock; the trace's is the monotonic one.
  const std::int64_t offset_ns = clock_ns("monotonic_ns") - clock_ns("realtime_ns");
  const auto to_trace_ns = [offset_ns](const json& e) {
    const std::int64_t us = e.at("time_us").get<std::int64_t>();
    if (us < 0 || us > kLatestUs) throw std::runtime_error(fmt::format("{} us is no time", us));
    const std::int64_t ns = us * 1000 + offset_ns;
    return ns < 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(ns);
  };
  const json& devices = doc.at("device_traces");
  Stacks stacks(trace, doc);
  std::vector<CachedBlock> blocks;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const auto device = static_cast<std::int32_t>(d);
    std::map<std::uint64_t, std::uint64_t> stream_of;  // handle -> the trace's stream id
    for (const StreamDesc& s : trace.streams)
      if (s.handle_known && s.device == device) stream_of.emplace(s.handle, s.id);
    std::map<std::uint64_t, std::size_t> open;  // address -> index in blocks
    for (const json& e : devices[d]) {
      const std::string action = e.at("action").get<std::string>();
      const std::uint64_t addr = e.at("addr").get<std::uint64_t>();
      if (action == "alloc") {
        CachedBlock b{.device = device, .addr = addr, .bytes = e.at("size").get<std::uint64_t>()};
        if (const auto s = stream_of.find(e.value("stream", std::uint64_t{0})); s != stream_of.end())
          b.stream = s->second, b.stream_known = true;
        b.alloc_ns = to_trace_ns(e);
        b.stack = stacks.of(e);
        open[addr] = blocks.size();
        blocks.push_back(b);
      } else if (action == "free_requested" || action == "free_completed") {
        const auto it = open.find(addr);
        if (it == open.end()) continue;  // allocated before the history began
        CachedBlock& b = blocks[it->second];
        const std::uint64_t at = to_trace_ns(e);
        if (b.free_requested_ns == CachedBlock::kNever) {
          b.free_requested_ns = at;
          b.free_stack = stacks.of(e);
        }
        if (action == "free_completed") {
          b.free_ns = at;
          open.erase(it);
        }
      }
    }
  }
  // Put on the trace's clock, the blocks fall within the recording; if most
  // do not, the history's times are not what this reader takes them for.
  if (trace.event_count() > 0 && !blocks.empty()) {
    constexpr std::uint64_t kSlack = 1'000'000'000;
    const std::uint64_t from = trace.begin_ns() > kSlack ? trace.begin_ns() - kSlack : 0, to = trace.end_ns() + kSlack;
    const auto inside = std::count_if(blocks.begin(), blocks.end(),
                                      [&](const CachedBlock& b) { return b.alloc_ns >= from && b.alloc_ns <= to; });
    if (static_cast<std::size_t>(inside) * 2 < blocks.size())
      throw std::runtime_error(fmt::format("{} of its {} blocks were allocated outside the recording: its clock is not "
                                           "the trace's",
                                           blocks.size() - static_cast<std::size_t>(inside), blocks.size()));
  }
  trace.cached_blocks = std::move(blocks);
}

}  // namespace

namespace {

// The trace may have been compressed since; what the hook wrote lies beside it as it was.
std::string beside_trace(const std::string& trace_path, const char* suffix) {
  const bool gzipped = trace_path.size() > 3 && trace_path.ends_with(".gz");
  return (gzipped ? trace_path.substr(0, trace_path.size() - 3) : trace_path) + suffix;
}

}  // namespace

std::string allocator_history_path(const std::string& trace_path) { return beside_trace(trace_path, ".torch-memory.json"); }

std::string out_of_memory_snapshot_path(const std::string& trace_path) {
  return beside_trace(trace_path, ".torch-oom.pickle");
}

void read_allocator_history(Trace& trace, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  read_allocator_history_text(trace, text, path);
}

void read_allocator_history_text(Trace& trace, std::string_view text, const std::string& name) {
  try {
    read_history(trace, json::parse(text));
  } catch (const std::exception& e) {
    trace.cached_blocks.clear();
    trace.allocator_history_note = name + ": " + e.what();
  }
}

}  // namespace gpudiag::import
