// Level-of-detail tiles of a device's memory timeline (html_tiles.h): what a
// view zoomed into a part of the run draws, chosen for that part.
#include "html_tiles.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>

namespace gpudiag::detail {
namespace {

// edge()'s arithmetic stays within 64 bits up to here.
constexpr unsigned kDeepestLevel = 30;
// What the "detail" object's keys, brackets and span take beside its tiles and blocks.
constexpr std::size_t kWrapperBytes = 128;
// What a tile looked at and left out counts against the budget, so that
// looking is bounded with the page.
constexpr std::size_t kLookedAtBytes = 256;
// A finer tile is kept where at least 1/kNewShare of what it shows is new.
constexpr std::size_t kNewShare = 8;

using Steps = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // (ns, bytes) of a step function

struct Tile {
  std::uint64_t index = 0, from = 0, to = 0;
  std::vector<std::uint32_t> shown;  // blocks drawn one by one, in allocation order
  Steps merged;                      // the live bytes of the rest, exactly, ending with a point at `to`
  bool deeper = true;                // whether a finer tile inside it can show a block it merges
};

// Whether a step function is above zero anywhere in [from, to).
bool positive_within(const Steps& s, std::uint64_t from, std::uint64_t to) {
  auto it = std::upper_bound(s.begin(), s.end(), from, [](std::uint64_t t, const auto& p) { return t < p.first; });
  if (it != s.begin() && std::prev(it)->second > 0) return true;
  for (; it != s.end() && it->first < to; ++it)
    if (it->second > 0) return true;
  return false;
}

// Tile i of level k is [edge(k, i), edge(k, i + 1)) in nanoseconds; the
// first starts at the device's first allocation, the last ends with the trace.
class Tiler {
 public:
  Tiler(const DeviceMemory& m, std::uint64_t end, std::size_t per_tile)
      : m_(m), first_(m.blocks.empty() ? end : m.blocks.front().alloc_ns), end_(end), per_tile_(per_tile) {
    for (std::uint32_t j = 0; j < m.blocks.size(); ++j)
      if (lives(j)) by_stop_.push_back({stop(j), j});
    std::sort(by_stop_.begin(), by_stop_.end());
  }

  bool spans_time() const { return first_ < end_ && per_tile_ > 0; }
  std::uint64_t first() const { return first_; }
  std::uint64_t stop(std::uint32_t j) const { return m_.blocks[j].free_ns == kStillLive ? end_ : m_.blocks[j].free_ns; }

  std::uint64_t edge(unsigned k, std::uint64_t i) const {
    const std::uint64_t span = end_ - first_, whole = span >> k, rest = span & ((std::uint64_t{1} << k) - 1);
    return first_ + whole * i + ((rest * i) >> k);
  }

  Tile root(const std::vector<std::uint32_t>& shown) const { return {0, first_, end_, shown, merged(first_, end_, shown), true}; }

  // For each of level k's tiles in `tiles` (ascending), the per_tile largest
  // blocks live across all of it: they weigh bytes x the tile's width, so
  // these are all a tile needs of the blocks that neither start nor end in it.
  std::vector<std::vector<std::uint32_t>> across(unsigned k, const std::vector<std::uint64_t>& tiles) const {
    const std::uint64_t narrowest = (end_ - first_) >> k;  // shorter blocks last across no tile
    const auto larger = [&](std::uint32_t x, std::uint32_t y) {
      const std::uint64_t bx = m_.blocks[x].bytes, by = m_.blocks[y].bytes;
      return bx != by ? bx > by : x < y;
    };
    std::set<std::uint32_t, decltype(larger)> live(larger);
    std::vector<std::vector<std::uint32_t>> out;
    std::uint32_t next_alloc = 0;
    std::size_t next_stop = 0;
    for (std::uint64_t i : tiles) {
      const std::uint64_t from = edge(k, i), to = edge(k, i + 1);
      for (; next_alloc < m_.blocks.size() && m_.blocks[next_alloc].alloc_ns < from; ++next_alloc)
        if (lives(next_alloc) && stop(next_alloc) - m_.blocks[next_alloc].alloc_ns > narrowest) live.insert(next_alloc);
      for (; next_stop < by_stop_.size() && by_stop_[next_stop].first <= from; ++next_stop) live.erase(by_stop_[next_stop].second);
      auto& list = out.emplace_back();
      for (auto it = live.begin(); it != live.end() && list.size() < per_tile_; ++it)
        if (stop(*it) >= to) list.push_back(*it);
    }
    return out;
  }

  // Tile i of level k: its per_tile largest blocks by bytes x their time
  // inside it (the earlier allocation on a tie), and the rest's live bytes.
  Tile make(unsigned k, std::uint64_t i, const std::vector<std::uint32_t>& across) const {
    Tile t{i, edge(k, i), edge(k, i + 1), {}, {}, true};
    using Ranked = std::pair<double, std::int64_t>;  // weight, -block: the larger the better
    std::priority_queue<Ranked, std::vector<Ranked>, std::greater<>> best;  // the worst kept on top
    const auto offer = [&](std::uint32_t j) {
      const Block& bl = m_.blocks[j];
      const Ranked r{static_cast<double>(bl.bytes) * static_cast<double>(std::min(stop(j), t.to) - std::max(bl.alloc_ns, t.from)),
                     -static_cast<std::int64_t>(j)};
      if (best.size() < per_tile_) {
        best.push(r);
      } else if (best.top() < r) {
        best.pop();
        best.push(r);
      }
    };
    // The blocks that start or end in the tile, and those that last across it.
    starting_or_ending(t.from, t.to, offer);
    for (std::uint32_t x : across) offer(x);
    for (; !best.empty(); best.pop()) t.shown.push_back(static_cast<std::uint32_t>(-best.top().second));
    std::sort(t.shown.begin(), t.shown.end());
    t.merged = merged(t.from, t.to, t.shown);
    // The per_tile largest blocks lasting across this tile last across every
    // finer tile inside it and outweigh there whatever is smaller, so a
    // finer tile shows only those and the blocks starting or ending here
    // that outrank the last of them. It is looked at only if enough of these
    // are ones this tile merges for it to be kept.
    if (across.size() == per_tile_) {
      const std::uint32_t last = across.back();
      const std::uint64_t floor = m_.blocks[last].bytes;
      const auto merged_here = [&](std::uint32_t j) { return !std::binary_search(t.shown.begin(), t.shown.end(), j); };
      std::size_t could_show = static_cast<std::size_t>(std::count_if(across.begin(), across.end(), merged_here));
      starting_or_ending(t.from, t.to, [&](std::uint32_t j) {
        const std::uint64_t bytes = m_.blocks[j].bytes;
        could_show += (bytes > floor || (bytes == floor && j < last)) && merged_here(j);
      });
      t.deeper = could_show > 0 && could_show * kNewShare >= per_tile_;
    }
    return t;
  }

 private:
  bool lives(std::uint32_t j) const { return m_.blocks[j].bytes > 0 && stop(j) > m_.blocks[j].alloc_ns; }

  // Calls f(block) for each block live in [from, to) that starts or ends there.
  template <typename F>
  void starting_or_ending(std::uint64_t from, std::uint64_t to, F&& f) const {
    auto j = static_cast<std::uint32_t>(
        std::lower_bound(m_.blocks.begin(), m_.blocks.end(), from, [](const Block& b, std::uint64_t v) { return b.alloc_ns < v; }) -
        m_.blocks.begin());
    for (; j < m_.blocks.size() && m_.blocks[j].alloc_ns < to; ++j)
      if (lives(j)) f(j);
    auto s = std::upper_bound(by_stop_.begin(), by_stop_.end(), from, [](std::uint64_t v, const auto& x) { return v < x.first; });
    for (; s != by_stop_.end() && s->first < to; ++s)
      if (m_.blocks[s->second].alloc_ns < from) f(s->second);
  }

  // The live bytes over [from, to) less those of `shown`: the device's step
  // function of live bytes is the sum of every block's, so what is left is
  // the rest's, without going through the rest one by one.
  Steps merged(std::uint64_t from, std::uint64_t to, const std::vector<std::uint32_t>& shown) const {
    std::vector<std::pair<std::uint64_t, std::int64_t>> changes;  // the shown blocks' own, inside the tile
    std::uint64_t drawn = 0;                                       // the shown blocks' bytes live at `from`
    for (std::uint32_t j : shown) {
      const Block& bl = m_.blocks[j];
      if (!lives(j) || bl.alloc_ns >= to || stop(j) <= from) continue;
      const auto bytes = static_cast<std::int64_t>(bl.bytes);
      if (bl.alloc_ns <= from) drawn += bl.bytes;
      else changes.push_back({bl.alloc_ns, bytes});
      if (stop(j) < to) changes.push_back({stop(j), -bytes});
    }
    std::sort(changes.begin(), changes.end());
    Steps out;
    const auto put = [&](std::uint64_t t, std::uint64_t live) {
      const std::uint64_t rest = live > drawn ? live - drawn : 0;
      if (out.empty() || out.back().second != rest) out.push_back({t, rest});
    };
    put(from, live_bytes_at(m_, from));
    auto c = changes.begin();
    auto p = std::upper_bound(m_.live.begin(), m_.live.end(), from, [](std::uint64_t v, const LivePoint& q) { return v < q.time_ns; });
    for (; p != m_.live.end() && p->time_ns < to; ++p) {
      for (; c != changes.end() && c->first <= p->time_ns; ++c) drawn += static_cast<std::uint64_t>(c->second);
      put(p->time_ns, p->live_bytes);
    }
    out.push_back({to, out.back().second});
    return out;
  }

  const DeviceMemory& m_;
  std::uint64_t first_, end_;
  std::size_t per_tile_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_stop_;  // (stop, block) of the blocks ever live, by stop
};

// Whether a tile shows enough that the coarser tile kept there merges: at
// least one block, and an eighth of what it shows.
bool adds_enough(const std::vector<std::uint32_t>& shown, const std::vector<std::uint32_t>& coarser) {
  std::size_t fresh = 0;
  for (std::uint32_t j : shown) fresh += !std::binary_search(coarser.begin(), coarser.end(), j);
  return fresh > 0 && fresh * kNewShare >= shown.size();
}

// What `j` adds to the page's script element, with the comma before it.
std::size_t page_bytes(const nlohmann::json& j) { return json_for_script(j).size() + 1; }

// The "detail" object, a level at a time: its tiles, the blocks they show
// that level 0 does not (keyed after level 0's series) and their stacks.
class Detail {
 public:
  Detail(Builder& b, const DeviceMemory& m, const Tiler& tiler, const std::vector<std::uint32_t>& level0, std::size_t points)
      : b_(b), m_(m), tiler_(tiler), level0_(level0.size()), points_(points) {
    for (std::size_t s = 0; s < level0.size(); ++s) key_.emplace(level0[s], s);
  }

  void begin_level() { level_ = {b_.stacks.size(), blocks_.size(), tiles_.size(), {}}; }
  bool level_has_tiles() const { return tiles_.size() > level_.tiles; }

  // Adds tile t of level k; returns what it, its new blocks and their new stacks add to the page.
  std::size_t add(unsigned k, const Tile& t) {
    std::size_t bytes = 0;
    const std::size_t stacks_before = b_.stacks.size();
    nlohmann::json series = nlohmann::json::array();
    for (std::uint32_t j : t.shown) {
      auto [it, fresh] = key_.try_emplace(j, level0_ + blocks_.size());
      if (fresh) {
        const Block& bl = m_.blocks[j];
        blocks_.push_back({b_.us(bl.alloc_ns), b_.us(tiler_.stop(j)), bl.bytes, fmt::format("0x{:x}", bl.addr),
                           std::string(to_string(bl.kind)), b_.stack(bl.stack), bl.free_ns == kStillLive});
        bytes += page_bytes(blocks_.back());
        level_.added.push_back(j);
      }
      series.push_back(it->second);
    }
    std::vector<std::pair<double, std::uint64_t>> steps;
    for (const auto& [at, v] : t.merged) steps.push_back({b_.us(at), v});
    tiles_.push_back({{"level", k}, {"index", t.index}, {"from", b_.us(t.from)}, {"to", b_.us(t.to)},
                      {"series", std::move(series)}, {"other", downsample(steps, points_)}});
    bytes += page_bytes(tiles_.back());
    for (std::size_t s = stacks_before; s < b_.stacks.size(); ++s) bytes += page_bytes(b_.stacks[s]);
    return bytes;
  }

  // Forgets what the level since begin_level() added, stacks included.
  void drop_level() {
    b_.forget_stacks_from(level_.stacks);
    for (std::uint32_t j : level_.added) key_.erase(j);
    blocks_.get_ref<nlohmann::json::array_t&>().resize(level_.blocks);
    tiles_.get_ref<nlohmann::json::array_t&>().resize(level_.tiles);
  }

  nlohmann::json finish(unsigned levels) {
    return {{"from", b_.us(tiler_.first())}, {"to", b_.us(b_.end)}, {"levels", levels}, {"blocks", std::move(blocks_)},
            {"tiles", std::move(tiles_)}};
  }

 private:
  Builder& b_;
  const DeviceMemory& m_;
  const Tiler& tiler_;
  std::size_t level0_, points_;
  std::unordered_map<std::uint32_t, std::size_t> key_;  // block -> its key in a tile's "series"
  nlohmann::json blocks_ = nlohmann::json::array(), tiles_ = nlohmann::json::array();
  struct {
    std::size_t stacks = 0, blocks = 0, tiles = 0;
    std::vector<std::uint32_t> added;
  } level_;
};

}  // namespace

nlohmann::json tiles_json(Builder& b, const DeviceMemory& m, const std::vector<std::uint32_t>& shown,
                          const HtmlOptions& options, std::size_t budget) {
  const Tiler tiler(m, b.end, options.tile_series);
  const unsigned deepest = static_cast<unsigned>(std::min<std::size_t>(options.max_tile_levels, kDeepestLevel));
  if (!tiler.spans_time() || deepest == 0 || budget < kWrapperBytes) return nullptr;
  // A tile is looked at where its coarser tile merged something that a tile
  // inside it may show, and kept where it shows enough that the nearest
  // coarser tile kept merges.
  struct Wanted {
    std::uint64_t index;
    std::size_t coarser;  // into `kept`
  };
  std::vector<std::vector<std::uint32_t>> kept{shown};  // what the tiles kept show, level 0 first
  std::vector<Wanted> wanted;
  const Tile root = tiler.root(shown);
  for (std::uint64_t i : {0u, 1u})
    if (positive_within(root.merged, tiler.edge(1, i), tiler.edge(1, i + 1))) wanted.push_back({i, 0});
  Detail detail(b, m, tiler, shown, options.tile_points);
  std::size_t used = kWrapperBytes;
  unsigned levels = 0;
  for (unsigned k = 1; k <= deepest && !wanted.empty(); ++k) {
    std::vector<std::uint64_t> indices;
    for (const Wanted& w : wanted) indices.push_back(w.index);
    const auto across = tiler.across(k, indices);
    detail.begin_level();
    const std::size_t kept_before = kept.size();
    std::size_t bytes = 0;
    std::vector<Wanted> finer;
    for (std::size_t n = 0; n < wanted.size() && used + bytes <= budget; ++n) {
      const Tile t = tiler.make(k, wanted[n].index, across[n]);
      std::size_t coarser = wanted[n].coarser;
      if (adds_enough(t.shown, kept[coarser])) {
        bytes += detail.add(k, t);
        kept.push_back(t.shown);
        coarser = kept.size() - 1;
      } else {
        bytes += kLookedAtBytes;
      }
      if (t.deeper)
        for (std::uint64_t c : {2 * t.index, 2 * t.index + 1})
          if (positive_within(t.merged, tiler.edge(k + 1, c), tiler.edge(k + 1, c + 1))) finer.push_back({c, coarser});
    }
    if (used + bytes > budget) {  // the page keeps the coarser levels only
      detail.drop_level();
      kept.resize(kept_before);
      break;
    }
    used += bytes;
    if (detail.level_has_tiles()) levels = k;
    wanted = std::move(finer);
  }
  return levels == 0 ? nlohmann::json() : detail.finish(levels);
}

}  // namespace gpudiag::detail
