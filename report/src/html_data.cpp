// The data embedded in the HTML page: per device the largest allocations as
// individual series, the rest merged into one downsampled series, the same
// for finer tiles of time where the run has more to show (html_tiles.cpp),
// allocator counters, a sample of kernels for "kernel nearby", findings
// with their catalogue entries, and the GPU time breakdown. Times are
// microseconds from the start of the trace.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "gpudiag/report/report.h"
#include "html_tiles.h"

namespace gpudiag {

namespace detail {

// Downsamples a step function to at most `max_points` (and its last),
// keeping the maximum of each bucket so peaks survive. A peak ends with its
// bucket where no step follows in the next one, rather than lasting over
// the gap, and an empty bucket adds no point.
nlohmann::json downsample(const std::vector<std::pair<double, std::uint64_t>>& steps, std::size_t max_points) {
  nlohmann::json out = nlohmann::json::array();
  if (steps.empty()) return out;
  if (steps.size() <= max_points) {
    for (const auto& [t, v] : steps) out.push_back({t, v});
    return out;
  }
  const double t0 = steps.front().first, t1 = steps.back().first;
  const double width = (t1 - t0) / static_cast<double>(max_points - 1);
  std::size_t i = 0;
  for (std::size_t b = 0; b < max_points && i < steps.size(); ++b) {
    const double limit = t0 + width * static_cast<double>(b + 1);
    if (steps[i].first >= limit && b + 1 < max_points) continue;
    std::uint64_t peak = steps[i].second;
    const double at = steps[i].first;
    while (i < steps.size() && (steps[i].first < limit || b + 1 == max_points)) peak = std::max(peak, steps[i++].second);
    out.push_back({at, peak});
    // The next bucket is empty and adds no point: this one's room goes to its last value.
    if (i < steps.size() && steps[i].first >= limit + width && steps[i - 1].second != peak)
      out.push_back({steps[i - 1].first, steps[i - 1].second});
  }
  out.push_back({steps.back().first, steps.back().second});
  return out;
}

}  // namespace detail

namespace {

using detail::Builder;
using detail::downsample;

nlohmann::json device_json(Builder& b, const DeviceMemory& m, const HtmlOptions& o, std::size_t tile_budget) {
  // Rank allocations by bytes x lifetime: what a viewer of the area notices.
  std::vector<std::uint32_t> order(m.blocks.size());
  std::iota(order.begin(), order.end(), 0u);
  auto weight = [&](std::uint32_t i) {
    const Block& bl = m.blocks[i];
    const std::uint64_t stop = bl.free_ns == kStillLive ? b.end : bl.free_ns;
    return static_cast<double>(bl.bytes) * static_cast<double>(std::max<std::uint64_t>(stop - bl.alloc_ns, 1));
  };
  const std::size_t keep = std::min(o.max_series, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](std::uint32_t x, std::uint32_t y) { return weight(x) > weight(y); });
  std::vector<std::uint32_t> shown(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep));
  std::sort(shown.begin(), shown.end());  // allocation order = stacking order
  nlohmann::json series = nlohmann::json::array();
  for (std::uint32_t i : shown) {
    const Block& bl = m.blocks[i];
    series.push_back({{"start", b.us(bl.alloc_ns)},
                      {"end", b.us(bl.free_ns == kStillLive ? b.end : bl.free_ns)},
                      {"live_at_end", bl.free_ns == kStillLive},
                      {"bytes", bl.bytes},
                      {"addr", fmt::format("0x{:x}", bl.addr)},
                      {"kind", std::string(to_string(bl.kind))},
                      {"stack", b.stack(bl.stack)}});
  }
  // The rest, merged into one step function.
  std::vector<std::pair<std::uint64_t, std::int64_t>> deltas;
  for (std::size_t k = keep; k < order.size(); ++k) {
    const Block& bl = m.blocks[order[k]];
    deltas.push_back({bl.alloc_ns, static_cast<std::int64_t>(bl.bytes)});
    if (bl.free_ns != kStillLive) deltas.push_back({bl.free_ns, -static_cast<std::int64_t>(bl.bytes)});
  }
  std::sort(deltas.begin(), deltas.end());
  std::vector<std::pair<double, std::uint64_t>> steps;
  std::int64_t live = 0;
  for (const auto& [t, d] : deltas) {
    live += d;
    const double at = b.us(t);
    if (!steps.empty() && steps.back().first == at)
      steps.back().second = static_cast<std::uint64_t>(std::max<std::int64_t>(live, 0));
    else
      steps.push_back({at, static_cast<std::uint64_t>(std::max<std::int64_t>(live, 0))});
  }
  if (!steps.empty()) steps.push_back({b.us(b.end), steps.back().second});
  std::vector<std::pair<double, std::uint64_t>> allocated, reserved;
  for (const MemoryCounter& c : m.counters) {
    allocated.push_back({b.us(c.time_ns), c.allocated_bytes});
    reserved.push_back({b.us(c.time_ns), c.reserved_bytes});
  }
  const std::uint64_t merged = order.size() - keep;
  nlohmann::json j = {{"device", m.device},
                      {"label", b.trace.device_label(m.device)},
                      {"allocations", m.blocks.size()},
                      {"peak_bytes", m.peak_bytes},
                      {"peak_us", b.us(m.peak_ns)},
                      {"capacity_bytes", m.capacity_bytes},
                      {"series", std::move(series)},
                      {"other", downsample(steps, o.max_points)},
                      {"other_count", merged},
                      {"expected_series", keep + (merged > 0 ? 1 : 0)},
                      {"allocated", downsample(allocated, o.max_points)},
                      {"reserved", downsample(reserved, o.max_points)}};
  if (merged > 0)
    if (nlohmann::json tiles = detail::tiles_json(b, m, shown, o, tile_budget); !tiles.is_null()) j["detail"] = std::move(tiles);
  return j;
}

}  // namespace

nlohmann::json html_data(const Trace& trace, const Report& report, const HtmlOptions& options) {
  Builder b{trace, trace.begin_ns(), trace.end_ns(), {}, nlohmann::json::array(), {}};
  nlohmann::json j;
  j["title"] = trace.path.empty() ? std::string("trace") : trace.path;
  j["source"] = std::string(to_string(trace.source));
  j["events"] = trace.event_count();
  j["duration_us"] = b.us(b.end);
  j["dropped_events"] = trace.dropped_events;
  j["truncated"] = trace.truncated;
  j["truncation_note"] = trace.truncation_note;
  j["corrupt_chunk"] = trace.corrupt_chunk;
  j["stopped_cleanly"] = trace.stopped_cleanly;
  j["warnings"] = warnings_json(trace, report);  // what the page shows above everything else
  j["devices"] = nlohmann::json::array();
  // The tiles' bytes are shared alike by the devices that merge some of their allocations.
  const auto merging = std::count_if(report.memory.devices.begin(), report.memory.devices.end(),
                                     [&](const DeviceMemory& m) { return m.blocks.size() > options.max_series; });
  const std::size_t tile_budget = merging ? options.tile_bytes / static_cast<std::size_t>(merging) : 0;
  for (const DeviceMemory& m : report.memory.devices) j["devices"].push_back(device_json(b, m, options, tile_budget));
  // Kernels, evenly sampled when there are too many.
  nlohmann::json names = nlohmann::json::array();
  std::unordered_map<StringId, std::size_t> name_index;
  nlohmann::json kernels = nlohmann::json::array();
  const std::size_t n = trace.kernels.size();
  const std::size_t step = n > options.max_kernels ? (n + options.max_kernels - 1) / options.max_kernels : 1;
  for (std::size_t i = 0; i < n; i += step) {
    const Kernel& k = trace.kernels[i];
    auto [it, fresh] = name_index.try_emplace(k.name, names.size());
    if (fresh) names.push_back(std::string(trace.str(k.name)));
    kernels.push_back({b.us(k.start_ns), b.us(k.end_ns), it->second, k.device});
  }
  j["kernel_names"] = std::move(names);
  j["kernels"] = std::move(kernels);
  j["findings"] = nlohmann::json::array();
  // In the terminal summary's order: the page groups them by rule as they come.
  for (const auto& group : findings_by_rule(report))
    for (const Finding* f : group) {
      nlohmann::json jf = to_json(*f);
      if (const Rule* rule = find_rule(f->rule_id)) {
        jf["summary"] = std::string(rule->summary);
        jf["explanation"] = std::string(rule->markdown);
      }
      j["findings"].push_back(std::move(jf));
    }
  j["gpu_time"] = nlohmann::json::array();
  for (const GpuTime& g : report.gpu_time) {
    nlohmann::json jg = gpu_time_json(g);
    jg["label"] = trace.device_label(g.device);  // "host" for the host's activity, as the summary says
    j["gpu_time"].push_back(std::move(jg));
  }
  j["stacks"] = std::move(b.stacks);
  return j;
}

std::string json_for_script(const nlohmann::json& data) {
  // ensure_ascii turns U+2028/U+2029 (and every non-ASCII) into \u escapes;
  // invalid UTF-8 from untrusted names becomes U+FFFD instead of throwing.
  const std::string raw = data.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 16);
  for (char c : raw) {
    // These characters occur only inside JSON strings, where \u escapes are equivalent.
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

}  // namespace gpudiag
