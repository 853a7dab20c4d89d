// NVTX ranges from CUPTI marker records (CUDA 13 layout, built here): a
// start and an end with the same id make one range on the thread that
// opened it, whatever comes between.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "nvtx_ranges.h"

namespace gpudiag::cupti {
namespace {

struct Names {
  std::map<std::string, rec::StringId> ids;
  Hooks hooks() {
    return Hooks{.intern =
                     [this](std::string_view s) {
                       return ids.emplace(std::string(s), static_cast<rec::StringId>(ids.size() + 1)).first->second;
                     },
                 .stack_of = nullptr,
                 .is_query = nullptr};
  }
};

CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flags, std::uint32_t id, std::uint64_t t, const char* name = nullptr,
                             std::uint32_t tid = 4242) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.id = id;
  m.timestamp = t;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 7;
  m.objectId.pt.threadId = tid;
  m.name = name;
  return m;
}

TEST(NvtxRanges, AStartAndItsEndAreOneRangeOnTheOpeningThread) {
  Names names;
  const Hooks h = names.hooks();
  MarkerRanges ranges;
  EXPECT_FALSE(ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 1000, "step 0"), h));
  EXPECT_EQ(ranges.open(), 1u);
  const auto r = ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 5000, nullptr, 99), h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_ns, 1000u);
  EXPECT_EQ(r->end_ns, 5000u);
  EXPECT_EQ(r->name, names.ids.at("step 0"));
  EXPECT_EQ(r->tid, 4242u) << "the thread that opened it: an end marker of a start/end range may come from another";
  EXPECT_EQ(ranges.open(), 0u);
}

TEST(NvtxRanges, NestedAndInterleavedRangesPairByTheirIds) {
  Names names;
  const Hooks h = names.hooks();
  MarkerRanges ranges;
  ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 10, 100, "step 1"), h);
  ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 11, 200, "forward"), h);
  const auto inner = ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 11, 300), h);
  const auto outer = ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 10, 900), h);
  ASSERT_TRUE(inner && outer);
  EXPECT_EQ(inner->name, names.ids.at("forward"));
  EXPECT_EQ(inner->start_ns, 200u);
  EXPECT_EQ(outer->name, names.ids.at("step 1"));
  EXPECT_EQ(outer->end_ns, 900u);
}

TEST(NvtxRanges, MarksUnmatchedEndsAndUnnamedRangesAreNoRanges) {
  Names names;
  const Hooks h = names.hooks();
  MarkerRanges ranges;
  EXPECT_FALSE(ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 1, 100, "checkpoint"), h));
  EXPECT_FALSE(ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 200), h)) << "its start was never seen";
  ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 300, ""), h);
  EXPECT_FALSE(ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 400), h)) << "no name marks no step";
  ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 500, "step"), h);
  EXPECT_FALSE(ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 500), h)) << "no time between start and end";
  EXPECT_EQ(ranges.open(), 0u);
}

TEST(NvtxRanges, RangesNeverClosedAreBounded) {
  Names names;
  const Hooks h = names.hooks();
  MarkerRanges ranges;
  for (std::uint32_t id = 1; id <= 100'000; ++id) ranges.add(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, id, id, "leak"), h);
  EXPECT_LT(ranges.open(), 100'000u);
}

}  // namespace
}  // namespace gpudiag::cupti
