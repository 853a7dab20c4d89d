// How a recorded stack is shown: from the program's own call (frames inside
// the CUDA libraries and gpudiag's are how the call was recorded, not where
// it was made), and as module+offset where no symbol is known.
#include <gtest/gtest.h>

#include "detect_support.h"

namespace gpudiag {
namespace {

Trace with_modules() {
  Trace t;
  t.modules.push_back({.path = t.intern("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), .base = 0x10000, .size = 0x1000, .low = 0x10000});
  t.modules.push_back({.path = t.intern("/usr/local/cuda/lib64/libcupti.so.13"), .base = 0x20000, .size = 0x1000, .low = 0x20000});
  t.modules.push_back({.path = t.intern("/opt/gpudiag/lib/libgpudiag_cupti.so"), .base = 0x30000, .size = 0x1000, .low = 0x30000});
  t.modules.push_back({.path = t.intern("/home/me/train"), .base = 0x40000, .size = 0x1000, .low = 0x40000});
  return t;
}

StackFrame frame(std::uint64_t ip, std::int32_t module, const char* function, Trace& t) {
  return {.ip = ip, .function = function ? t.intern(function) : 0, .module = module};
}

TEST(Frames, MangledNamesAreDemangledAndOthersKept) {
  EXPECT_EQ(demangle("_Z5scalePfi"), "scale(float*, int)");
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("_Znot_a_name"), "_Znot_a_name") << "what does not demangle stays as it is";
}

TEST(Frames, StacksStartAtTheProgramsOwnCall) {
  Trace t = with_modules();
  Stack s;
  s.frames = {frame(0x30100, 2, "gpudiag::cupti::on_api", t), frame(0x20100, 1, "cuptiCallback", t),
              frame(0x10100, 0, "cuMemAlloc_v2", t), frame(0x40100, 3, "train_step", t), frame(0x40200, 3, "main", t)};
  const auto frames = frames_of(t, t.add_stack(std::move(s)));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "train_step");
  EXPECT_EQ(frames[1].function, "main");
}

TEST(Frames, AStackEntirelyInsideTheLibrariesIsShownWhole) {
  Trace t = with_modules();
  Stack s;
  s.frames = {frame(0x10100, 0, "cuMemAlloc_v2", t), frame(0x20100, 1, "cuptiWorker", t)};
  EXPECT_EQ(frames_of(t, t.add_stack(std::move(s))).size(), 2u);
}

TEST(Frames, AFrameWithoutSymbolIsNamedByModuleAndOffset) {
  Trace t = with_modules();
  Stack s;
  s.frames = {frame(0x40abc, 3, nullptr, t), frame(0x99999, -1, nullptr, t)};
  const auto frames = frames_of(t, t.add_stack(std::move(s)));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "train+0xabc");
  EXPECT_EQ(frames[0].module, "/home/me/train");
  EXPECT_EQ(frames[1].function, "") << "outside every module: only its address is known";
  EXPECT_EQ(frames[1].address, 0x99999u);
}

}  // namespace
}  // namespace gpudiag
