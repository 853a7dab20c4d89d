// The page's memory timeline at finer levels of detail (html_tiles.cpp), and
// what the tiles share with the rest of the page's data (html_data.cpp): the
// Builder that turns times into the page's microseconds and numbers the
// stacks it refers to, and downsample().
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/analysis/memory_timeline.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace.h"

namespace gpudiag::detail {

struct Builder {
  const Trace& trace;
  std::uint64_t origin;
  std::uint64_t end;
  std::unordered_map<StackId, std::size_t> stack_index;
  nlohmann::json stacks = nlohmann::json::array();
  std::vector<StackId> stack_ids;  // stacks' ids in their order, so that the newest can be forgotten

  double us(std::uint64_t t) const { return t <= origin ? 0.0 : static_cast<double>(t - origin) / 1e3; }

  std::size_t stack(StackId id) {
    auto [it, fresh] = stack_index.try_emplace(id, stacks.size());
    if (fresh) {
      nlohmann::json frames = nlohmann::json::array();
      for (const Frame& f : frames_of(trace, id))
        frames.push_back(fmt::format("{}{}{}", f.function.empty() ? fmt::format("0x{:x}", f.address) : f.function,
                                     f.file.empty() ? "" : fmt::format(" {}:{}", f.file, f.line),
                                     f.module.empty() ? "" : fmt::format(" ({})", f.module)));
      stacks.push_back(std::move(frames));
      stack_ids.push_back(id);
    }
    return it->second;
  }

  // Forgets the stacks numbered from `count` on, as if stack() had never been asked for them.
  void forget_stacks_from(std::size_t count) {
    while (stack_ids.size() > count) {
      stack_index.erase(stack_ids.back());
      stack_ids.pop_back();
      stacks.erase(stacks.size() - 1);
    }
  }
};

// Downsamples a step function to at most `max_points` (and its last),
// keeping the maximum of each bucket so peaks survive, but not over a gap.
nlohmann::json downsample(const std::vector<std::pair<double, std::uint64_t>>& steps, std::size_t max_points);

// The device's timeline from its first allocation to the end of the trace,
// split at level k into 2^k equal tiles, each with its own options.tile_series
// largest allocations (bytes x the part of their lifetime inside the tile)
// and the rest merged into one downsampled step function, so that a zoomed
// view draws the allocations of the time it shows. `shown` are the blocks
// level 0 (the whole run) draws one by one, in allocation order.
//
// A tile is looked at only where its coarser tile merged something that a
// tile inside it may show, and kept only where at least an eighth of what
// it shows is merged by the nearest coarser tile kept (the page draws that
// one instead). Levels are added coarse to fine, never beyond
// options.max_tile_levels, while the tiles kept, the allocations and the
// stacks they add to the page and 256 bytes for each tile looked at and left
// out fit in `budget` bytes. Null when no tile is kept; otherwise
// {"from", "to": the span in us, "levels": the finest level kept,
//  "blocks": [[start, end, bytes, addr, kind, stack, live_at_end], ...],
//  "tiles": [{"level", "index", "from", "to", "series", "other"}, ...]},
// where a tile's "series" are indices into the device's level-0 series
// followed by "blocks".
nlohmann::json tiles_json(Builder& b, const DeviceMemory& m, const std::vector<std::uint32_t>& shown,
                          const HtmlOptions& options, std::size_t budget);

}  // namespace gpudiag::detail
