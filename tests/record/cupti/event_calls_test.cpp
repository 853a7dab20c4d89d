// event_use() and queried_stream(): which event a call recorded on which
// stream or found done, and which stream a query asked about, read from
// CUPTI's parameter structs built here.
#include <gtest/gtest.h>

#include "event_calls.h"

namespace gpudiag::cupti {
namespace {

const void* handle(std::uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(EventCalls, RecordsNameTheirEventAndStream) {
  cudaEventRecord_v3020_params runtime{reinterpret_cast<cudaEvent_t>(0xe1), reinterpret_cast<cudaStream_t>(0x51)};
  EventUse u = event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, &runtime);
  EXPECT_EQ(u.op, EventUse::Op::Record);
  EXPECT_EQ(u.event, handle(0xe1));
  EXPECT_EQ(u.stream, handle(0x51));
  EXPECT_FALSE(u.per_thread_stream);

  cudaEventRecordWithFlags_ptsz_v11010_params flagged{reinterpret_cast<cudaEvent_t>(0xe2), nullptr, 0};
  u = event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010, &flagged);
  EXPECT_EQ(u.op, EventUse::Op::Record);
  EXPECT_EQ(u.event, handle(0xe2));
  EXPECT_TRUE(u.per_thread_stream) << "stream 0 of a _ptsz call is the per-thread stream";

  cuEventRecord_params driver{reinterpret_cast<CUevent>(0xe3), reinterpret_cast<CUstream>(0x53)};
  u = event_use(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &driver);
  EXPECT_EQ(u.op, EventUse::Op::Record);
  EXPECT_EQ(u.event, handle(0xe3));
  EXPECT_EQ(u.stream, handle(0x53));
}

TEST(EventCalls, QueriesNameTheirEvent) {
  cudaEventQuery_v3020_params runtime{reinterpret_cast<cudaEvent_t>(0xe4)};
  EventUse u = event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, &runtime);
  EXPECT_EQ(u.op, EventUse::Op::Query);
  EXPECT_EQ(u.event, handle(0xe4));
  cuEventQuery_params driver{reinterpret_cast<CUevent>(0xe5)};
  u = event_use(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventQuery, &driver);
  EXPECT_EQ(u.op, EventUse::Op::Query);
  EXPECT_EQ(u.event, handle(0xe5));
}

TEST(EventCalls, StreamQueriesNameTheirStream) {
  cudaStreamQuery_v3020_params runtime{reinterpret_cast<cudaStream_t>(0x54)};
  QueriedStream q = queried_stream(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, &runtime);
  EXPECT_TRUE(q.queried);
  EXPECT_EQ(q.stream, handle(0x54));
  EXPECT_FALSE(q.per_thread_stream);

  cudaStreamQuery_ptsz_v7000_params per_thread{nullptr};
  q = queried_stream(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000, &per_thread);
  EXPECT_TRUE(q.queried);
  EXPECT_TRUE(q.per_thread_stream) << "stream 0 of a _ptsz call is the per-thread stream";

  cuStreamQuery_params driver{reinterpret_cast<CUstream>(0x55)};
  q = queried_stream(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, &driver);
  EXPECT_TRUE(q.queried);
  EXPECT_EQ(q.stream, handle(0x55));
}

TEST(EventCalls, EventCallsAndSynchronisationsAreNoStreamQueries) {
  cudaStreamQuery_v3020_params p{reinterpret_cast<cudaStream_t>(0x54)};
  EXPECT_FALSE(queried_stream(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &p).queried);
  EXPECT_FALSE(queried_stream(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, &p).queried);
  EXPECT_FALSE(queried_stream(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, nullptr).queried);
  EXPECT_FALSE(queried_stream(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, &p).queried);
  cudaEventQuery_v3020_params event{reinterpret_cast<cudaEvent_t>(0xe4)};
  EXPECT_EQ(event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, &event).op,
            EventUse::Op::None);
}

TEST(EventCalls, OtherCallsAndMissingParametersAreNone) {
  cudaEventQuery_v3020_params p{reinterpret_cast<cudaEvent_t>(0xe4)};
  EXPECT_EQ(event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, &p).op,
            EventUse::Op::None);
  EXPECT_EQ(event_use(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, nullptr).op,
            EventUse::Op::None);
  EXPECT_EQ(event_use(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, &p).op,
            EventUse::Op::None);
}

TEST(EventCalls, StreamAndEventQueriesAreQueriesAndSynchronisationsAreNot) {
  for (const CUpti_CallbackId cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000})
    EXPECT_TRUE(is_query(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) << cbid;
  for (const CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuEventQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
                                      CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz})
    EXPECT_TRUE(is_query(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) << cbid;
  EXPECT_FALSE(is_query(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020));
  EXPECT_FALSE(is_query(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_FALSE(is_query(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
}

}  // namespace
}  // namespace gpudiag::cupti
