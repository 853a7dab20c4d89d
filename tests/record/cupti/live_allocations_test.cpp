// The live allocations that resolve kernel arguments without the driver:
// ranges added and removed as the calls say, and, over random sequences of
// allocations, frees, unmaps and context ends, the same answer as a driver
// that knows the same memory, asked only for what the map does not hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "live_allocations.h"

namespace gpudiag::cupti {
namespace {

constexpr std::uint64_t kBase = 0x7e0000000000ull;

TEST(LiveAllocations, AnAddressIsFoundInTheAllocationHoldingItUntilItIsFreed) {
  LiveAllocations live;
  live.add(kBase, 4096, MemKind::Device);
  live.add(kBase + 8192, 100, MemKind::Pinned);
  EXPECT_EQ(live.find(kBase), MemKind::Device);
  EXPECT_EQ(live.find(kBase + 4095), MemKind::Device);
  EXPECT_EQ(live.find(kBase + 4096), MemKind::Unknown) << "one past the end";
  EXPECT_EQ(live.find(kBase + 8192 + 99), MemKind::Pinned);
  EXPECT_EQ(live.find(kBase - 1), MemKind::Unknown);
  live.remove(kBase + 16, 0);
  EXPECT_EQ(live.find(kBase + 16), MemKind::Device) << "a free names the allocation's start";
  live.remove(kBase, 0);
  EXPECT_EQ(live.find(kBase + 16), MemKind::Unknown) << "freed after this thread found it";
  EXPECT_EQ(live.find(kBase + 8192), MemKind::Pinned);
}

TEST(LiveAllocations, AnUnmappedRangeTakesEveryAllocationItOverlapsAndAContextsEndAll) {
  LiveAllocations live;
  for (std::uint64_t i = 0; i < 4; ++i) live.add(kBase + i * 0x1000, 0x1000, MemKind::Device);
  ASSERT_EQ(live.find(kBase + 0x1000), MemKind::Device);  // now in this thread's recent hits
  live.remove(kBase + 0x1800, 0x1000);  // overlaps the second and the third
  EXPECT_EQ(live.find(kBase), MemKind::Device);
  EXPECT_EQ(live.find(kBase + 0x1000), MemKind::Unknown);
  EXPECT_EQ(live.find(kBase + 0x2fff), MemKind::Unknown);
  EXPECT_EQ(live.find(kBase + 0x3000), MemKind::Device);
  live.clear();
  EXPECT_EQ(live.find(kBase), MemKind::Unknown);
  EXPECT_EQ(live.size(), 0u);
}

TEST(LiveAllocations, AnAllocationOverARangeWhoseFreeWasNotSeenReplacesIt) {
  LiveAllocations live;
  live.add(kBase, 0x2000, MemKind::Pinned);
  ASSERT_EQ(live.find(kBase), MemKind::Pinned);
  live.add(kBase + 0x1000, 0x100, MemKind::Managed);
  EXPECT_EQ(live.find(kBase + 0x1000), MemKind::Managed);
  EXPECT_EQ(live.find(kBase), MemKind::Unknown);
  EXPECT_EQ(live.size(), 1u);
}

TEST(LiveAllocations, OneMadeWhereAnotherWasKnowsNoneOfItsAllocations) {
  alignas(LiveAllocations) unsigned char storage[sizeof(LiveAllocations)];
  auto* first = new (storage) LiveAllocations;
  first->add(kBase, 4096, MemKind::Device);
  ASSERT_EQ(first->find(kBase), MemKind::Device);  // in this thread's recent hits
  first->~LiveAllocations();
  auto* second = new (storage) LiveAllocations;
  EXPECT_EQ(second->find(kBase), MemKind::Unknown);
  second->~LiveAllocations();
}

// ---- a driver that knows what was allocated: the reference ----
struct Known {
  std::uint64_t start, end;
  MemKind kind;
};
std::vector<Known> g_world;
int g_queries = 0;

DriverMemory world_driver(std::uint64_t address) {
  ++g_queries;
  for (const Known& k : g_world)
    if (address >= k.start && address < k.end)
      return k.kind == MemKind::Device ? DriverMemory::Device
             : k.kind == MemKind::Pinned ? DriverMemory::Host
                                         : DriverMemory::Managed;
  return DriverMemory::NotKnown;
}

void forget(std::uint64_t start, std::uint64_t end) {
  std::erase_if(g_world, [&](const Known& k) { return k.start < end && start < k.end; });
}

TEST(LiveAllocations, OverRandomSequencesTheAnswerIsTheDriversAndTheDriverIsAskedOnlyForMisses) {
  std::mt19937_64 random(20261128);
  const MemKind kinds[] = {MemKind::Device, MemKind::Pinned, MemKind::Managed};
  for (int run = 0; run < 20; ++run) {
    LiveAllocations live;
    g_world.clear();
    std::vector<std::uint64_t> ever;  // starts of every allocation made, live or not
    for (int step = 0; step < 2000; ++step) {
      const auto op = random() % 100;
      if (op < 40) {  // an allocation, on a 4 KiB grid of a 16 MiB region
        const std::uint64_t start = kBase + (random() % 4096) * 4096, bytes = 1 + random() % (64 * 1024);
        const MemKind kind = kinds[random() % 3];
        forget(start, start + bytes);  // as the map does: what overlaps was freed unseen
        g_world.push_back({start, start + bytes, kind});
        live.add(start, bytes, kind);
        ever.push_back(start);
      } else if (op < 70 && !ever.empty()) {  // a free by address (maybe already freed)
        const std::uint64_t start = ever[random() % ever.size()];
        std::erase_if(g_world, [&](const Known& k) { return k.start == start; });
        live.remove(start, 0);
      } else if (op < 78) {  // an unmapped range
        const std::uint64_t start = kBase + (random() % 4096) * 4096, bytes = 4096 * (1 + random() % 32);
        forget(start, start + bytes);
        live.remove(start, bytes);
      } else if (op < 79) {  // a context's end
        g_world.clear();
        live.clear();
      } else {  // a launch's argument: in an allocation made once, or anywhere near
        // Mostly near the newest allocations, which this thread's recent hits hold.
        const std::size_t recent = ever.empty() ? 0 : ever.size() - 1 - random() % std::min<std::size_t>(ever.size(), 6);
        const std::uint64_t address = !ever.empty() && random() % 3 != 0 ? ever[recent] + random() % 70000
                                                                          : kBase + random() % (1ull << 24);
        const bool aggregate = random() % 2 == 0;
        const bool held = live.find(address) != MemKind::Unknown;
        g_queries = 0;
        const MemKind with_map = resolve_memory(&live, address, aggregate, world_driver);
        EXPECT_EQ(g_queries, held ? 0 : 1) << "address " << std::hex << address;
        EXPECT_EQ(with_map, resolve_memory(nullptr, address, aggregate, world_driver))
            << "run " << run << " step " << step << " address " << std::hex << address;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// Numbers are no addresses: neither the map nor the driver is asked.
TEST(LiveAllocations, SmallNumbersAreNeverLookedUp) {
  LiveAllocations live;
  live.add(0x100, 0x100, MemKind::Device);  // no such allocation can exist; it is never consulted
  g_queries = 0;
  EXPECT_EQ(resolve_memory(&live, 0x180, true, world_driver), MemKind::Unknown);
  EXPECT_EQ(g_queries, 0);
}

// Launching threads read while others allocate and free: a range that stays
// allocated is found by every read, and a freed one by none after its free.
TEST(LiveAllocations, ReadersSeeTheirAllocationWhileOthersComeAndGo) {
  LiveAllocations live;
  live.add(kBase, 1 << 20, MemKind::Device);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&, t] {
      std::uint64_t i = static_cast<std::uint64_t>(t);
      while (!stop.load(std::memory_order_relaxed))
        if (live.find(kBase + (i++ * 4099) % (1 << 20)) != MemKind::Device) ++wrong;
    });
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t start = kBase + (2ull << 20) + (i % 64) * 4096;
    live.add(start, 4096, MemKind::Pinned);
    live.remove(start, 0);
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(live.find(kBase + (2ull << 20)), MemKind::Unknown);
  EXPECT_EQ(live.size(), 1u);
}

}  // namespace
}  // namespace gpudiag::cupti
