// The nsys importer on a database built here with the schema of
// `nsys export --type sqlite` (tables and columns as nsys names them, nsys's
// own memory-kind numbering), and on SQLite files of another schema.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "gpudiag/trace_io.h"
#include "gpudiag/import/load_trace.h"
#include "test_support.h"

namespace gpudiag {
namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

std::string make_db(const std::string& name, const std::string& sql) {
  const std::string path = test::temp_path(name);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, sql);
  sqlite3_close(db);
  return path;
}

const char* kNsysSchema = R"(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, totalMemory INTEGER NOT NULL, cuDevice INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,
  streamId INT NOT NULL, correlationId INT, globalPid INT, demangledName INT NOT NULL, shortName INT NOT NULL, mangledName INT,
  gridX INT NOT NULL, gridY INT NOT NULL, gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL, blockZ INT NOT NULL,
  staticSharedMemory INT NOT NULL, dynamicSharedMemory INT NOT NULL, registersPerThread INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,
  streamId INT NOT NULL, correlationId INT, globalPid INT, bytes INT NOT NULL, copyKind INT NOT NULL, deprecatedSrcId INT,
  srcKind INT, dstKind INT, srcDeviceId INT, srcContextId INT, dstDeviceId INT, dstContextId INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,
  streamId INT NOT NULL, correlationId INT, globalPid INT, value INT NOT NULL, bytes INT NOT NULL, graphNodeId INT, memKind INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT NOT NULL, end INT NOT NULL, eventClass INT NOT NULL, globalTid INT,
  correlationId INT, nameId INT NOT NULL, returnValue INT NOT NULL, callchainId INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,
  streamId INT NOT NULL, correlationId INT, globalPid INT, syncType INT NOT NULL, eventId INT NOT NULL);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INT NOT NULL, globalPid INT, deviceId INT NOT NULL, contextId INT NOT NULL,
  address INT NOT NULL, pc INT NOT NULL, bytes INT NOT NULL, memKind INT NOT NULL, memoryOperationType INT NOT NULL,
  name TEXT, correlationId INT);
INSERT INTO StringIds VALUES (1, 'cudaMemcpyAsync'), (2, 'void gemm<float>(float*, int)'), (3, 'gemm'), (4, 'cudaMalloc'),
  (5, 'cudaStreamSynchronize');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),
  (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'), (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed');
INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 85899345920, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1500, 1, 72057594037927936 + 4242, 10, 1, 0, 0),
  (900, 950, 1, 4242, 9, 4, 2, 0), (2000, 2600, 1, 4242, 12, 5, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1100, 1400, 0, 1, 7, 10, 1, 4096, 1, 0, 0, 2, 0, 1, 0, 1),
  (1600, 1700, 0, 1, 7, 11, 1, 8, 2, 0, 2, 1, 0, 1, 0, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1450, 1900, 0, 1, 7, 11, 1, 2, 3, 0, 8, 4, 1, 128, 2, 1, 1024, 512, 32);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (1420, 1440, 0, 1, 7, 13, 1, 0, 256, 0, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (2050, 2550, 0, 1, 7, 12, 1, 3, 0);
INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (920, 1, 0, 1, 65536, 0, 4096, 2, 0, '', 9), (3000, 1, 0, 1, 65536, 0, 4096, 2, 1, '', 0);
)";

TEST(NsysImport, ReadsEveryTableOfAnNsysExport) {
  const std::string path = make_db("report.sqlite", kNsysSchema);
  const Trace t = load_trace(path);  // detected as SQLite
  EXPECT_EQ(t.source, TraceSource::Nsys);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.str(t.kernels[0].name), "void gemm<float>(float*, int)");
  EXPECT_EQ(t.kernels[0].grid[0], 8u);
  EXPECT_EQ(t.kernels[0].grid[1], 4u);
  EXPECT_EQ(t.kernels[0].block[0], 128u);
  EXPECT_EQ(t.kernels[0].shared_bytes, 1536u);
  EXPECT_EQ(t.kernels[0].stream, 7u);
  ASSERT_EQ(t.memcpys.size(), 2u);
  EXPECT_EQ(t.memcpys[0].copy, CopyKind::HtoD);
  EXPECT_EQ(t.memcpys[0].src_kind, MemKind::Pageable) << "nsys: 0 = pageable";
  EXPECT_EQ(t.memcpys[0].dst_kind, MemKind::Device) << "nsys: 2 = device";
  EXPECT_TRUE(t.memcpys[0].async) << "launched by cudaMemcpyAsync";
  EXPECT_EQ(t.memcpys[1].copy, CopyKind::DtoH);
  EXPECT_EQ(t.memcpys[1].dst_kind, MemKind::Pinned) << "nsys: 1 = pinned";
  EXPECT_FALSE(t.memcpys[1].async);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].kind, MemKind::Device);
  ASSERT_EQ(t.api_calls.size(), 3u);
  EXPECT_EQ(t.str(t.api_calls[0].name), "cudaMalloc");
  EXPECT_EQ(t.api_calls[0].status, 2);
  EXPECT_EQ(t.api_calls[1].tid, 4242u) << "thread id from globalTid";
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs[0].kind, SyncKind::Stream);
  EXPECT_EQ(t.syncs[0].tid, 4242u) << "nsys names no thread for a sync: the call with its correlation id was on 4242";
  ASSERT_EQ(t.allocs.size(), 1u);
  ASSERT_EQ(t.frees.size(), 1u);
  EXPECT_EQ(t.allocs[0].addr, 65536u);
  EXPECT_EQ(t.allocs[0].kind, MemKind::Device);
  EXPECT_EQ(t.frees[0].time_ns, 3000u);
  ASSERT_NE(t.device(0), nullptr);
  EXPECT_EQ(t.str(t.device(0)->name), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.streams.size(), 1u);
}

// NVTX ranges (push/pop 59, start/end 60) become the trace's ranges, named by
// their text or their registered string; marks (34) and open ranges do not.
TEST(NsysImport, NvtxRangesBecomeRangesWithTheirNamesAndThreads) {
  const std::string path = make_db("nvtx.sqlite", R"(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, correlationId INT, shortName INT);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
      category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
      domainId INTEGER);
    INSERT INTO StringIds VALUES (5, 'step 2');
    INSERT INTO NVTX_EVENTS VALUES (100, 200, 59, NULL, NULL, NULL, 'step 1', 281474976714898, NULL, NULL, 0),
      (200, 300, 60, 1, NULL, NULL, NULL, 281474976714898, NULL, 5, 0),
      (250, NULL, 34, NULL, NULL, NULL, 'a mark', 281474976714898, NULL, NULL, 0),
      (300, NULL, 59, NULL, NULL, NULL, 'never closed', 281474976714898, NULL, NULL, 0);
  )");
  const Trace t = load_trace(path);
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.str(t.ranges[0].name), "step 1");
  EXPECT_EQ(t.ranges[0].end_ns, 200u);
  EXPECT_EQ(t.str(t.ranges[1].name), "step 2") << "named through StringIds";
  EXPECT_EQ(t.ranges[0].tid, 4242u) << "thread id from globalTid";
}

// Without ENUM_CUDA_MEM_KIND (older nsys, or an export trimmed to the
// activity tables) the importer's own numbering applies: 0 pageable,
// 1 pinned, 2 device, 3 array, 4 managed, 5 device static, 6 managed static.
TEST(NsysImport, MemoryKindsWithoutTheEnumTableUseNsysNumbering) {
  const std::string path = make_db("no-enum.sqlite", R"(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
      streamId INT NOT NULL, correlationId INT, bytes INT NOT NULL, copyKind INT NOT NULL, srcKind INT, dstKind INT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
      streamId INT NOT NULL, correlationId INT, value INT NOT NULL, bytes INT NOT NULL, memKind INT);
    CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INT NOT NULL, deviceId INT NOT NULL, address INT NOT NULL,
      bytes INT NOT NULL, memKind INT NOT NULL, memoryOperationType INT NOT NULL, correlationId INT);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10, 20, 0, 7, 1, 64, 1, 0, 2), (30, 40, 0, 7, 2, 64, 2, 2, 1),
      (50, 60, 0, 7, 3, 64, 8, 4, 3), (70, 80, 0, 7, 4, 64, 1, 9, 6);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (90, 95, 0, 7, 5, 0, 32, 2), (96, 99, 0, 7, 6, 0, 32, 1);
    INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (5, 0, 4096, 64, 1, 0, 0), (6, 0, 8192, 64, 5, 0, 0);)");
  const Trace t = import_nsys(path);
  ASSERT_EQ(t.memcpys.size(), 4u);
  EXPECT_EQ(t.memcpys[0].src_kind, MemKind::Pageable) << "0 = pageable";
  EXPECT_EQ(t.memcpys[0].dst_kind, MemKind::Device) << "2 = device";
  EXPECT_EQ(t.memcpys[1].src_kind, MemKind::Device);
  EXPECT_EQ(t.memcpys[1].dst_kind, MemKind::Pinned) << "1 = pinned";
  EXPECT_EQ(t.memcpys[2].src_kind, MemKind::Managed) << "4 = managed";
  EXPECT_EQ(t.memcpys[2].dst_kind, MemKind::Array) << "3 = array";
  EXPECT_EQ(t.memcpys[3].src_kind, MemKind::Unknown) << "a number nsys does not define";
  EXPECT_EQ(t.memcpys[3].dst_kind, MemKind::Managed) << "6 = managed static";
  ASSERT_EQ(t.memsets.size(), 2u);
  EXPECT_EQ(t.memsets[0].kind, MemKind::Device);
  EXPECT_EQ(t.memsets[1].kind, MemKind::Pinned);
  ASSERT_EQ(t.allocs.size(), 2u);
  EXPECT_EQ(t.allocs[0].kind, MemKind::Pinned);
  EXPECT_EQ(t.allocs[1].kind, MemKind::Device) << "5 = device static";
}

TEST(NsysImport, PartialExportWithOnlySomeTablesLoads) {
  const std::string path = make_db("partial.sqlite", R"(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, correlationId INT, shortName INT);
    INSERT INTO StringIds VALUES (1, 'k');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 3, 4, 1);)");
  const Trace t = import_nsys(path);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.str(t.kernels[0].name), "k") << "shortName when demangledName is absent";
}

TEST(NsysImport, SqliteOfAnotherSchemaIsAClearError) {
  const std::string path = make_db("other.sqlite", "CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');");
  try {
    load_trace(path);
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("not an Nsight Systems export"), std::string::npos) << e.what();
  }
}

TEST(NsysImport, CorruptSqliteIsAClearError) {
  const std::string good = make_db("good.sqlite", kNsysSchema);
  std::string bytes = test::read_file(good);
  bytes.resize(1000);  // header intact, pages gone
  const std::string path = test::temp_path("cut.sqlite");
  test::write_file(path, bytes);
  EXPECT_THROW(load_trace(path), TraceError);
}

}  // namespace
}  // namespace gpudiag
