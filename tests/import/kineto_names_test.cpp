// Decoding Kineto's activity names into copy directions and memory kinds.
#include <gtest/gtest.h>

#include "kineto_names.h"

namespace gpudiag::import {
namespace {

TEST(KinetoNames, MemcpyNamesGiveDirectionAndKinds) {
  auto d = parse_memcpy_name("Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(d.copy, CopyKind::HtoD);
  EXPECT_EQ(d.src, MemKind::Pageable);
  EXPECT_EQ(d.dst, MemKind::Device);
  d = parse_memcpy_name("Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(d.copy, CopyKind::DtoH);
  EXPECT_EQ(d.dst, MemKind::Pinned);
  d = parse_memcpy_name("Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(d.copy, CopyKind::DtoD);
  d = parse_memcpy_name("Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(d.copy, CopyKind::PtoP);
  d = parse_memcpy_name("Memcpy HtoD");
  EXPECT_EQ(d.copy, CopyKind::HtoD);
  EXPECT_EQ(d.src, MemKind::Unknown) << "not named: not guessed";
  EXPECT_EQ(d.dst, MemKind::Device) << "the device side of HtoD";
  d = parse_memcpy_name("Memcpy (Managed -> Pageable)");
  EXPECT_EQ(d.copy, CopyKind::DtoH) << "direction derived from the kinds";
  d = parse_memcpy_name("something else");
  EXPECT_EQ(d.copy, CopyKind::Unknown);
}

TEST(KinetoNames, MemsetAndSyncNames) {
  EXPECT_EQ(parse_memset_name("Memset (Device)"), MemKind::Device);
  EXPECT_EQ(parse_memset_name("Memset (Managed)"), MemKind::Managed);
  EXPECT_EQ(parse_memset_name("Memset"), MemKind::Unknown);
  EXPECT_EQ(parse_sync_name("Stream Sync"), SyncKind::Stream);
  EXPECT_EQ(parse_sync_name("Event Sync"), SyncKind::Event);
  EXPECT_EQ(parse_sync_name("Context Sync"), SyncKind::Context);
  EXPECT_EQ(parse_sync_name("Stream Wait Event"), SyncKind::StreamWaitEvent);
  EXPECT_EQ(parse_sync_name("cudaDeviceSynchronize"), SyncKind::Device);
  EXPECT_FALSE(parse_sync_name("cudaLaunchKernel").has_value());
  EXPECT_EQ(sync_of_runtime_call("cudaStreamSynchronize"), SyncKind::Stream);
  EXPECT_FALSE(sync_of_runtime_call("cudaMalloc").has_value());
}

}  // namespace
}  // namespace gpudiag::import
