// GD003 unsynced-transfer: the host touching the destination of an
// asynchronous copy before a synchronisation covered it, by time or as the
// copy guard caught it.
#include <gtest/gtest.h>

#include "detect_support.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

using namespace gpudiag::testing;

TEST(UnsyncedTransfer, ReadBeforeTheStreamSyncIsReported) {
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.host_accesses.push_back({.time_ns = 300, .addr = 0x5100, .bytes = 4, .stack = stack_named(t, "print_loss")});
  const auto f = only(detect(t), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("still running"), std::string::npos);
  EXPECT_EQ(f[0].stack.at(0).function, "print_loss");
}

// A runtime that records a copy when it queues it (gdrt) gives no end: the
// finding then claims nothing about which came first.
TEST(UnsyncedTransfer, ACopyWithoutAnEndTimeIsReportedWithoutTiming) {
  Trace t;
  Memcpy c = copy(100, 0, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.host_accesses.push_back({.time_ns = 300, .addr = 0x5100, .bytes = 4});
  const auto f = only(detect(t), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.find("happened to finish"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].message.find("still running"), std::string::npos) << f[0].message;
}

TEST(UnsyncedTransfer, SyncOfTheStreamOrDeviceCoversTheRead) {
  for (SyncKind kind : {SyncKind::Stream, SyncKind::Device}) {
    Trace t;
    Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
    c.dst = 0x5000;
    t.memcpys.push_back(c);
    t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = kind, .device = 0, .stream = 7});
    t.host_accesses.push_back({.time_ns = 600, .addr = 0x5100, .bytes = 4});
    EXPECT_TRUE(only(detect(t), "GD003").empty()) << to_string(kind);
  }
  // A sync of another stream does not.
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1024, true);
  c.dst = 0x5000;
  t.memcpys.push_back(c);
  t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = SyncKind::Stream, .device = 0, .stream = 99});
  t.host_accesses.push_back({.time_ns = 600, .addr = 0x5100, .bytes = 4});
  EXPECT_EQ(only(detect(t), "GD003").size(), 1u);
}

// A host access the copy guard caught on a GPU: it names its copy (by the
// correlation of the copy's API call), and is reported whatever the syncs
// around it, with the accessing stack and the copy's.
Trace guarded_access_trace(AccessKind access, std::uint64_t guarded_copy, std::uint64_t access_time = 300) {
  Trace t;
  Memcpy c = copy(100, 500, CopyKind::DtoH, 1 << 20, true);
  c.dst = 0x7f0000000000;
  c.correlation = 77;
  t.memcpys.push_back(c);
  t.api_calls.push_back({.start_ns = 90, .end_ns = 95, .name = t.intern("cudaMemcpyAsync"), .domain = ApiDomain::Runtime,
                         .correlation = 77, .stack = stack_named(t, "fetch_predictions", "infer.cu", 12)});
  t.host_accesses.push_back({.time_ns = access_time, .addr = 0x7f0000001010, .access = access,
                             .stack = stack_named(t, "write_mask", "infer.cu", 14), .guarded_copy = guarded_copy});
  return t;
}

TEST(UnsyncedTransfer, AnAccessTheCopyGuardCaughtIsReportedWithBothStacks) {
  const auto f = only(detect(guarded_access_trace(AccessKind::Read, 77)), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::Error);
  EXPECT_NE(f[0].message.find("host read at 0x7f0000001010"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("cudaMemcpyAsync of 1.00 MiB on stream 7"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("still running"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].stack.at(0).function, "write_mask");
  ASSERT_EQ(f[0].notes.size(), 1u);
  EXPECT_EQ(f[0].notes[0].stack.at(0).function, "fetch_predictions");
  // After the copy ended it is still the bug: the copy happened to be first.
  const auto late = only(detect(guarded_access_trace(AccessKind::Read, 77, 900)), "GD003");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_NE(late[0].message.find("happened to finish first"), std::string::npos) << late[0].message;
}

TEST(UnsyncedTransfer, ACaughtWriteIsReportedAsAWrite) {
  const auto f = only(detect(guarded_access_trace(AccessKind::Write, 77)), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("host write at"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("may overwrite"), std::string::npos) << f[0].message;
}

TEST(UnsyncedTransfer, AnAccessWithoutAGuardedCopyAfterTheSyncIsNotReported) {
  Trace t = guarded_access_trace(AccessKind::Read, 0, 900);
  t.syncs.push_back({.start_ns = 150, .end_ns = 510, .kind = SyncKind::Stream, .device = 0, .stream = 7});
  EXPECT_TRUE(only(detect(t), "GD003").empty());
}

TEST(UnsyncedTransfer, ACaughtAccessIsOneFindingPerCopyNotTwo) {
  // The time-based matching would see the same read: it leaves caught accesses
  // to the guard's report, and a copy caught twice is reported once.
  Trace t = guarded_access_trace(AccessKind::Read, 77);
  t.host_accesses.push_back(t.host_accesses[0]);
  t.host_accesses.back().time_ns = 310;
  EXPECT_EQ(only(detect(t), "GD003").size(), 1u);
  // A copy whose records were lost is still named, by its call or not at all.
  Trace lost = guarded_access_trace(AccessKind::Read, 78);
  const auto f = only(detect(lost), "GD003");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("not in the trace"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace gpudiag
