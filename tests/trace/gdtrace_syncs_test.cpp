// CUPTI's synchronisation records as a .gdtrace reader completes them from
// the API call of their correlation id: the thread that waited, and whether
// the call was a query rather than a wait.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "gpudiag/api_kinds.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

// CUPTI's synchronisation records carry no thread: the recorder writes them
// from the thread that drains CUPTI's buffers. The thread that waited is the
// one whose call has the same correlation id.
TEST(GdtraceSyncs, ASyncIsOnTheThreadOfTheCallThatWaited) {
  Trace in;
  in.api_calls.push_back({.start_ns = 10, .end_ns = 30, .name = in.intern("cudaStreamSynchronize"), .tid = 7, .correlation = 5});
  in.syncs.push_back({.start_ns = 11, .end_ns = 29, .kind = SyncKind::Stream, .tid = 99, .correlation = 5});
  in.syncs.push_back({.start_ns = 40, .end_ns = 50, .kind = SyncKind::Stream, .tid = 98, .correlation = 6});
  in.syncs.push_back({.start_ns = 60, .end_ns = 70, .kind = SyncKind::Context, .tid = 97});
  const std::string path = test::temp_path("sync_threads.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  ASSERT_EQ(out.syncs.size(), 3u);
  EXPECT_EQ(out.syncs[0].tid, 7u) << "the call with its correlation id was made on thread 7";
  EXPECT_EQ(out.syncs[1].tid, 98u) << "no call has its correlation id";
  EXPECT_EQ(out.syncs[2].tid, 97u) << "no correlation id";
}

// A trace recorded before the recorder told queries apart (or from nsys)
// has CUPTI's stream and event syncs for them: a query that found the work
// done is a Query sync of its stream, one that found it running is no sync.
TEST(GdtraceSyncs, QueriesRecordedAsSyncsAreQueriesOrNothing) {
  Trace in;
  const auto call = [&](const char* name, std::int32_t status, std::uint64_t correlation, std::uint64_t at) {
    in.api_calls.push_back({.start_ns = at, .end_ns = at + 5, .name = in.intern(name), .status = status, .tid = 7,
                            .correlation = correlation});
    in.syncs.push_back({.start_ns = at + 1, .end_ns = at + 4,
                        .kind = std::string_view(name).find("Event") != std::string_view::npos ? SyncKind::Event
                                                                                               : SyncKind::Stream,
                        .stream = 13, .correlation = correlation});
  };
  call("cudaEventQuery_v3020", 0, 1, 10);
  call("cudaStreamQuery_v3020", 0, 2, 20);
  call("cuStreamQuery_ptsz", 0, 3, 30);
  call("cudaEventQuery_v3020", kCudaNotReady, 4, 40);
  call("cuStreamQuery", kCudaNotReady, 5, 50);
  call("cudaStreamSynchronize_v3020", 0, 6, 60);
  call("cudaEventSynchronize_v3020", 0, 7, 70);
  const std::string path = test::temp_path("queries.gdtrace");
  write_gdtrace(in, path);
  const Trace out = read_gdtrace(path);
  ASSERT_EQ(out.syncs.size(), 5u) << "the two that found work running are gone";
  const SyncKind want[] = {SyncKind::Query, SyncKind::Query, SyncKind::Query, SyncKind::Stream, SyncKind::Event};
  for (std::size_t i = 0; i < out.syncs.size(); ++i) {
    EXPECT_EQ(out.syncs[i].kind, want[i]) << i;
    EXPECT_EQ(out.syncs[i].stream, 13u) << i;
    EXPECT_EQ(out.syncs[i].tid, 7u) << i;
  }
  EXPECT_EQ(out.api_calls.size(), in.api_calls.size()) << "the calls themselves stay";
}

}  // namespace
}  // namespace gpudiag
