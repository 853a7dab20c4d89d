// The page's finer levels of detail (report/src/html_tiles.cpp), read from
// html_data() as the page reads them: what a zoomed view draws one by one,
// that it stacks up to the live bytes, and what the tiles cost the page.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "gpudiag/report/report.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

constexpr int kPerStep = 40;

// One allocation as the page draws it: [start, end) in us and its bytes.
struct Drawn {
  double start, end;
  std::uint64_t bytes;
  std::string addr;
};

// The allocations a tile draws one by one: its "series" index the device's
// level-0 series, then the detail's blocks.
std::vector<Drawn> drawn(const nlohmann::json& dev, const nlohmann::json& tile) {
  std::vector<Drawn> out;
  const std::size_t level0 = dev["series"].size();
  for (std::size_t key : tile["series"]) {
    if (key < level0) {
      const auto& s = dev["series"][key];
      out.push_back({s["start"], s["end"], s["bytes"], s["addr"]});
    } else {
      const auto& b = dev["detail"]["blocks"][key - level0];
      out.push_back({b[0], b[1], b[2], b[3]});
    }
  }
  return out;
}

std::vector<Drawn> level0(const nlohmann::json& dev) {
  std::vector<Drawn> out;
  for (const auto& s : dev["series"]) out.push_back({s["start"], s["end"], s["bytes"], s["addr"]});
  return out;
}

// A step function's value at t, as the page's stepAt() reads it.
std::uint64_t step_at(const nlohmann::json& points, double t) {
  std::uint64_t v = 0;
  for (const auto& p : points) {
    if (p[0].get<double>() > t) break;
    v = p[1];
  }
  return v;
}

std::uint64_t stacked_at(const std::vector<Drawn>& shown, const nlohmann::json& other, double t) {
  std::uint64_t total = step_at(other, t);
  for (const Drawn& d : shown)
    if (d.start <= t && t < d.end) total += d.bytes;
  return total;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// The tile of `level` whose span holds [from, to] (us), or null.
const nlohmann::json* tile_holding(const nlohmann::json& dev, unsigned level, double from, double to) {
  for (const auto& t : dev["detail"]["tiles"])
    if (t["level"] == level && t["from"].get<double>() <= from && to <= t["to"].get<double>()) return &t;
  return nullptr;
}

// Zoomed into one step, the page draws that step's activations; over the
// whole run it draws the weights, and the step's activations are merged.
TEST(HtmlTiles, ATileOfOneStepShowsThatStepsAllocationsWhereTheWholeRunShowsTheWeights) {
  const int steps = 64, step = 10;
  const Trace t = weights_and_activations(steps, kPerStep);
  const auto data = html_data(t, analyze(t));
  const auto& dev = data["devices"][0];
  std::set<std::string> whole;
  for (const Drawn& d : level0(dev)) whole.insert(d.addr);
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(whole.count(hex(kWeightsAddr + (i << 28)))) << "weight " << i;
  for (int j = 0; j < kPerStep; ++j) EXPECT_FALSE(whole.count(hex(activation_addr(step, j, kPerStep)))) << j;

  ASSERT_TRUE(dev.contains("detail")) << "no finer level of detail";
  const double from = static_cast<double>(step_start_ns(step)) / 1e3, to = from + 400;
  // The finest tile that holds the step: at most a few steps wide, and showing all of it.
  const nlohmann::json* tile = nullptr;
  for (unsigned level = 1; level <= dev["detail"]["levels"].get<unsigned>(); ++level)
    if (const auto* found = tile_holding(dev, level, from, to)) tile = found;
  ASSERT_NE(tile, nullptr) << "no tile holds step " << step;
  EXPECT_LE((*tile)["to"].get<double>() - (*tile)["from"].get<double>(), 8 * 1000.0) << tile->dump();
  std::set<std::string> zoomed;
  for (const Drawn& d : drawn(dev, *tile)) zoomed.insert(d.addr);
  for (int j = 0; j < kPerStep; ++j) EXPECT_TRUE(zoomed.count(hex(activation_addr(step, j, kPerStep)))) << j;
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(zoomed.count(hex(kWeightsAddr + (i << 28)))) << "weight " << i;
}

// At every level and in every tile, what is drawn one by one and what is
// merged add up to the live bytes, at every allocation and free and between
// them; and a tile is there only where it shows an allocation that the
// nearest coarser tile there merged.
TEST(HtmlTiles, EveryTileStacksUpToTheLiveBytes) {
  Trace t = weights_and_activations(64, kPerStep);
  // Leaks from the middle on, and an address freed and handed out again at once.
  for (std::uint64_t i = 0; i < 30; ++i) alloc(t, step_start_ns(32) + 123'000 * i, 0x30000000000 + (i << 24), (i + 1) << 16);
  // Small buffers that each last 5 ms, some of them live wherever a tile starts.
  for (std::uint64_t i = 0; i < 480; ++i) {
    alloc(t, 130'007 * i, 0x60000000000 + (i << 20), 4096 + i);
    free_at(t, 130'007 * i + 5'000'000, 0x60000000000 + (i << 20));
  }
  alloc(t, step_start_ns(20) + 5, 0x50000000000, 1 << 20);
  free_at(t, step_start_ns(40), 0x50000000000);
  alloc(t, step_start_ns(40), 0x50000000000, 2 << 20);
  t.sort_by_time();
  HtmlOptions o;
  o.max_points = o.tile_points = 1'000'000;  // no downsampling: the sums are exact
  const Report r = analyze(t);
  const auto data = html_data(t, r, o);
  const auto& dev = data["devices"][0];
  const DeviceMemory& m = r.memory.devices[0];
  ASSERT_TRUE(dev.contains("detail"));
  std::vector<std::uint64_t> events;
  for (const Alloc& a : t.allocs) events.push_back(a.time_ns);
  for (const Free& f : t.frees) events.push_back(f.time_ns);
  const std::uint64_t origin = t.begin_ns();
  auto check = [&](const std::vector<Drawn>& shown, const nlohmann::json& other, double from, double to, const std::string& what) {
    std::size_t checked = 0;
    // At the tile's start and middle too, which no allocation or free may mark.
    std::vector<std::uint64_t> times = events;
    const auto ns = [&](double us) { return origin + static_cast<std::uint64_t>(std::llround(us * 1e3)); };
    times.push_back(ns(from));
    times.push_back((ns(from) + ns(to)) / 2);
    for (std::uint64_t e : times)
      for (std::uint64_t at : {e, e + 500}) {
        const double us = static_cast<double>(at - origin) / 1e3;
        if (us < from || us >= to) continue;
        ASSERT_EQ(stacked_at(shown, other, us), live_bytes_at(m, at)) << what << " at " << us << " us";
        ++checked;
      }
    EXPECT_GT(checked, 0u) << what;
  };
  check(level0(dev), dev["other"], dev["detail"]["from"], dev["detail"]["to"], "level 0");
  std::map<std::pair<unsigned, std::uint64_t>, const nlohmann::json*> tiles;
  for (const auto& tile : dev["detail"]["tiles"]) tiles[{tile["level"], tile["index"]}] = &tile;
  std::set<unsigned> levels;
  for (const auto& [at, tile] : tiles) {
    const auto [level, index] = at;
    levels.insert(level);
    const double from = (*tile)["from"], to = (*tile)["to"];
    check(drawn(dev, *tile), (*tile)["other"], from, to, "tile " + std::to_string(index) + " of level " + std::to_string(level));
    // What the page draws there when this tile is left out.
    const nlohmann::json* coarser = &dev;
    for (unsigned l = level - 1; l > 0; --l)
      if (tiles.count({l, index >> (level - l)})) {
        coarser = tiles[{l, index >> (level - l)}];
        break;
      }
    std::set<std::string> before;
    for (const Drawn& d : coarser == &dev ? level0(dev) : drawn(dev, *coarser)) before.insert(d.addr);
    bool adds = false;
    for (const Drawn& d : drawn(dev, *tile)) adds |= !before.count(d.addr);
    EXPECT_TRUE(adds) << "tile " << index << " of level " << level << " shows nothing more than the coarser tile";
  }
  EXPECT_GE(levels.size(), 3u) << "too few levels to test";
}

// A device with no more allocations than the page draws one by one needs no
// finer level; the busy device beside it has them.
TEST(HtmlTiles, ADeviceWithFewAllocationsHasNoTiles) {
  Trace t = weights_and_activations(16, kPerStep);
  for (std::uint64_t i = 0; i < 10; ++i) {
    alloc(t, step_start_ns(static_cast<int>(i)) + 1, 0x40000000000 + (i << 20), 4096, 1);
    free_at(t, step_start_ns(static_cast<int>(i)) + 2000, 0x40000000000 + (i << 20), 1);
  }
  t.sort_by_time();
  const auto data = html_data(t, analyze(t));
  ASSERT_EQ(data["devices"].size(), 2u);
  for (const auto& dev : data["devices"]) {
    if (dev["device"] == 1) {
      EXPECT_EQ(dev["series"].size(), 10u);
      EXPECT_FALSE(dev.contains("detail")) << dev["detail"].dump();
    } else {
      EXPECT_TRUE(dev.contains("detail"));
    }
  }
}

// The tiles add at most tile_bytes to the page, their stacks included, at
// the default budget and at a tight one; the tight one keeps fewer levels.
TEST(HtmlTiles, TilesStayWithinTheirBudget) {
  const Trace t = weights_and_activations(5000, kPerStep);  // 200,000 activations
  const Report r = analyze(t);
  HtmlOptions none;
  none.max_tile_levels = 0;
  const std::size_t without = json_for_script(html_data(t, r, none)).size();
  for (std::size_t budget : {HtmlOptions{}.tile_bytes, std::size_t{1} << 20}) {
    HtmlOptions o;
    o.tile_bytes = budget;
    const auto data = html_data(t, r, o);
    const auto& dev = data["devices"][0];
    ASSERT_TRUE(dev.contains("detail")) << budget;
    EXPECT_LE(json_for_script(data).size() - without, budget);
    const unsigned levels = dev["detail"]["levels"];
    if (budget == HtmlOptions{}.tile_bytes) {
      EXPECT_GE(levels, 8u) << "the default budget keeps the levels that show a few steps per tile";
    } else {
      EXPECT_LT(levels, 8u) << "1 MB cannot hold the levels that 40 MB holds";
      EXPECT_GE(levels, 1u);
    }
  }
}

}  // namespace
}  // namespace gpudiag
