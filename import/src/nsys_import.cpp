// Nsight Systems SQLite export (`nsys export --type sqlite`) -> Trace.
// Tables are created lazily by nsys, and columns come and go between
// versions, so every table is optional and columns are found by name.
// Memory kinds use nsys's numbering (ENUM_CUDA_MEM_KIND: 0 pageable, 1 pinned,
// 2 device, 3 array, 4 managed...), read from the database when present.
#include <sqlite3.h>

#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include "gpudiag/trace_io.h"
#include "gpudiag/import/load_trace.h"

namespace gpudiag {
namespace {

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close(db);
      throw TraceError(path + ": cannot open as SQLite: " + why);
    }
    db_.reset(db);
  }

  bool has_table(const std::string& name) {
    bool found = false;
    query("SELECT name FROM sqlite_master WHERE type='table' AND name='" + name + "'", [&](const Row&) { found = true; });
    return found;
  }

  struct Row {
    sqlite3_stmt* stmt;
    const std::map<std::string, int>* columns;
    std::int64_t i(const char* col, std::int64_t fallback = 0) const {
      auto it = columns->find(col);
      if (it == columns->end() || sqlite3_column_type(stmt, it->second) == SQLITE_NULL) return fallback;
      return sqlite3_column_int64(stmt, it->second);
    }
    std::string s(const char* col) const {
      auto it = columns->find(col);
      if (it == columns->end()) return {};
      const auto* text = sqlite3_column_text(stmt, it->second);
      return text ? reinterpret_cast<const char*>(text) : "";
    }
    bool has(const char* col) const { return columns->count(col) != 0; }
  };

  void query(const std::string& sql, const std::function<void(const Row&)>& each) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
      throw TraceError(path_ + ": " + sqlite3_errmsg(db_.get()) + " (in: " + sql + ")");
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    std::map<std::string, int> columns;
    for (int c = 0; c < sqlite3_column_count(raw); ++c) columns[sqlite3_column_name(raw, c)] = c;
    Row row{raw, &columns};
    int rc;
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW) each(row);
    if (rc != SQLITE_DONE) throw TraceError(path_ + ": " + sqlite3_errmsg(db_.get()));
  }

 private:
  std::string path_;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_{nullptr, sqlite3_close};
};

std::uint64_t u64(std::int64_t v) { return v < 0 ? 0 : static_cast<std::uint64_t>(v); }
std::uint32_t u32(std::int64_t v) { return v < 0 ? 0 : static_cast<std::uint32_t>(std::min<std::int64_t>(v, UINT32_MAX)); }
// nsys packs the process id above the thread id in globalTid.
std::uint32_t tid_of(std::int64_t global_tid) { return static_cast<std::uint32_t>(global_tid & 0xffffff); }

MemKind mem_kind_from_label(const std::string& name) {
  if (name.find("PAGEABLE") != std::string::npos) return MemKind::Pageable;
  if (name.find("PINNED") != std::string::npos) return MemKind::Pinned;
  if (name.find("MANAGED") != std::string::npos) return MemKind::Managed;
  if (name.find("DEVICE") != std::string::npos) return MemKind::Device;
  if (name.find("ARRAY") != std::string::npos) return MemKind::Array;
  return MemKind::Unknown;
}

class NsysImporter {
 public:
  explicit NsysImporter(const std::string& path) : db_(path) {
    trace_.source = TraceSource::Nsys;
    trace_.path = path;
  }

  Trace run() {
    static const char* kTables[] = {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
                                    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUDA_GPU_MEMORY_USAGE_EVENTS"};
    bool any = false;
    for (const char* t : kTables) any |= (present_[t] = db_.has_table(t));
    if (!any)
      throw TraceError(trace_.path + ": SQLite database but not an Nsight Systems export (none of StringIds, "
                                     "CUPTI_ACTIVITY_KIND_*, CUDA_GPU_MEMORY_USAGE_EVENTS)");
    read_enums();
    if (present_["StringIds"])
      db_.query("SELECT * FROM StringIds", [&](const Db::Row& r) { strings_[r.i("id")] = trace_.intern(r.s("value")); });
    if (db_.has_table("TARGET_INFO_GPU"))
      db_.query("SELECT * FROM TARGET_INFO_GPU", [&](const Db::Row& r) {
        const auto id = static_cast<std::int32_t>(r.has("cuDevice") ? r.i("cuDevice") : r.i("id"));
        if (trace_.device(id) == nullptr) trace_.devices.push_back({id, trace_.intern(r.s("name")), u64(r.i("totalMemory"))});
      });
    kernels();
    memcpys();
    memsets();
    runtime();
    syncs();
    memory();
    nvtx_ranges();
    trace_.join_syncs_with_their_calls();
    trace_.sort_by_time();
    return std::move(trace_);
  }

 private:
  StringId str(std::int64_t id) const {
    auto it = strings_.find(id);
    return it == strings_.end() ? 0 : it->second;
  }

  MemKind mem_kind(std::int64_t v) const {
    auto it = mem_kinds_.find(v);
    return it == mem_kinds_.end() ? MemKind::Unknown : it->second;
  }

  void read_enums() {
    // nsys's defaults, overridden by the database's own enum table if present.
    mem_kinds_ = {{0, MemKind::Pageable}, {1, MemKind::Pinned}, {2, MemKind::Device}, {3, MemKind::Array},
                  {4, MemKind::Managed},  {5, MemKind::Device}, {6, MemKind::Managed}};
    if (db_.has_table("ENUM_CUDA_MEM_KIND"))
      db_.query("SELECT * FROM ENUM_CUDA_MEM_KIND", [&](const Db::Row& r) { mem_kinds_[r.i("id")] = mem_kind_from_label(r.s("name")); });
  }

  void note_stream(std::int32_t device, std::uint64_t stream) {
    if (streams_.emplace(std::make_pair(device, stream), true).second)
      trace_.streams.push_back({device, stream, trace_.intern("stream " + std::to_string(stream))});
  }

  void kernels() {
    if (!present_["CUPTI_ACTIVITY_KIND_KERNEL"]) return;
    db_.query("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL", [&](const Db::Row& r) {
      Kernel k{.start_ns = u64(r.i("start")), .end_ns = u64(r.i("end")),
               .name = str(r.has("demangledName") ? r.i("demangledName") : r.i("shortName")),
               .grid = {u32(r.i("gridX")), u32(r.i("gridY")), u32(r.i("gridZ"))},
               .block = {u32(r.i("blockX")), u32(r.i("blockY")), u32(r.i("blockZ"))},
               .shared_bytes = u32(r.i("staticSharedMemory") + r.i("dynamicSharedMemory")),
               .device = static_cast<std::int32_t>(r.i("deviceId")), .stream = u64(r.i("streamId")),
               .correlation = u64(r.i("correlationId"))};
      if (k.name == 0) k.name = str(r.i("shortName"));
      trace_.kernels.push_back(k);
      note_stream(k.device, k.stream);
    });
  }

  void memcpys() {
    if (!present_["CUPTI_ACTIVITY_KIND_MEMCPY"]) return;
    // ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, 10 PtoP; arrays count as device.
    static const std::map<std::int64_t, CopyKind> kCopy = {
        {1, CopyKind::HtoD}, {2, CopyKind::DtoH}, {3, CopyKind::HtoD}, {4, CopyKind::DtoH},  {5, CopyKind::DtoD},
        {6, CopyKind::DtoD}, {7, CopyKind::DtoD}, {8, CopyKind::DtoD}, {9, CopyKind::HtoH}, {10, CopyKind::PtoP},
        {11, CopyKind::HtoD}, {12, CopyKind::DtoH}, {13, CopyKind::DtoD}};
    db_.query("SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY", [&](const Db::Row& r) {
      auto it = kCopy.find(r.i("copyKind"));
      Memcpy m{.start_ns = u64(r.i("start")), .end_ns = u64(r.i("end")), .bytes = u64(r.i("bytes")),
               .copy = it == kCopy.end() ? CopyKind::Unknown : it->second, .src_kind = mem_kind(r.i("srcKind", -1)),
               .dst_kind = mem_kind(r.i("dstKind", -1)), .device = static_cast<std::int32_t>(r.i("deviceId")),
               .peer_device = static_cast<std::int32_t>(r.i("dstDeviceId", kHostDevice)), .stream = u64(r.i("streamId")),
               .correlation = u64(r.i("correlationId"))};
      trace_.memcpys.push_back(m);
      note_stream(m.device, m.stream);
    });
  }

  void memsets() {
    if (!present_["CUPTI_ACTIVITY_KIND_MEMSET"]) return;
    db_.query("SELECT * FROM CUPTI_ACTIVITY_KIND_MEMSET", [&](const Db::Row& r) {
      Memset m{.start_ns = u64(r.i("start")), .end_ns = u64(r.i("end")), .bytes = u64(r.i("bytes")), .value = u32(r.i("value")),
               .kind = mem_kind(r.i("memKind", -1)), .device = static_cast<std::int32_t>(r.i("deviceId")),
               .stream = u64(r.i("streamId")), .correlation = u64(r.i("correlationId"))};
      trace_.memsets.push_back(m);
      note_stream(m.device, m.stream);
    });
  }

  void runtime() {
    if (!present_["CUPTI_ACTIVITY_KIND_RUNTIME"]) return;
    db_.query("SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME", [&](const Db::Row& r) {
      trace_.api_calls.push_back({.start_ns = u64(r.i("start")), .end_ns = u64(r.i("end")), .name = str(r.i("nameId")),
                                  .domain = ApiDomain::Runtime, .status = static_cast<std::int32_t>(r.i("returnValue")),
                                  .tid = tid_of(r.i("globalTid")), .correlation = u64(r.i("correlationId"))});
    });
    // The async flag of copies and memsets comes from the API that launched them.
    std::unordered_map<std::uint64_t, StringId> by_corr;
    for (const auto& a : trace_.api_calls) by_corr.emplace(a.correlation, a.name);
    auto async_of = [&](std::uint64_t corr) {
      auto it = by_corr.find(corr);
      return it != by_corr.end() && trace_.str(it->second).find("Async") != std::string_view::npos;
    };
    for (auto& m : trace_.memcpys) m.async = async_of(m.correlation);
    for (auto& m : trace_.memsets) m.async = async_of(m.correlation);
  }

  void syncs() {
    if (!present_["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"]) return;
    // ENUM_CUPTI_SYNC_TYPE: 1 event, 2 stream wait event, 3 stream, 4 context.
    static const std::map<std::int64_t, SyncKind> kSync = {
        {1, SyncKind::Event}, {2, SyncKind::StreamWaitEvent}, {3, SyncKind::Stream}, {4, SyncKind::Context}};
    db_.query("SELECT * FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", [&](const Db::Row& r) {
      auto it = kSync.find(r.i("syncType"));
      trace_.syncs.push_back({.start_ns = u64(r.i("start")), .end_ns = u64(r.i("end")),
                              .kind = it == kSync.end() ? SyncKind::Unknown : it->second,
                              .device = static_cast<std::int32_t>(r.i("deviceId")), .stream = u64(r.i("streamId")),
                              .event = u64(r.i("eventId")), .correlation = u64(r.i("correlationId"))});
    });
  }

  // NVTX push/pop and start/end ranges (eventType 59 and 60): the program's
  // own names for its spans of time, such as its training steps.
  void nvtx_ranges() {
    if (!db_.has_table("NVTX_EVENTS")) return;
    db_.query("SELECT * FROM NVTX_EVENTS", [&](const Db::Row& r) {
      if (const std::int64_t type = r.i("eventType", -1); type != 59 && type != 60) return;
      const std::uint64_t start = u64(r.i("start")), end = u64(r.i("end"));
      if (end <= start) return;
      const std::string text = r.has("text") ? r.s("text") : std::string();
      const StringId name = !text.empty() ? trace_.intern(text) : str(r.i("textId"));
      trace_.ranges.push_back({.start_ns = start, .end_ns = end, .name = name, .tid = tid_of(r.i("globalTid"))});
    });
  }

  void memory() {
    if (!present_["CUDA_GPU_MEMORY_USAGE_EVENTS"]) return;
    // memoryOperationType: 0 allocation, 1 deallocation.
    db_.query("SELECT * FROM CUDA_GPU_MEMORY_USAGE_EVENTS", [&](const Db::Row& r) {
      const auto t = u64(r.i("start"));
      const auto device = static_cast<std::int32_t>(r.i("deviceId"));
      const MemKind kind = mem_kind(r.i("memKind", -1));
      if (r.i("memoryOperationType") == 1)
        trace_.frees.push_back({.time_ns = t, .addr = u64(r.i("address")), .bytes = u64(r.i("bytes")), .kind = kind,
                                .device = device, .correlation = u64(r.i("correlationId"))});
      else
        trace_.allocs.push_back({.time_ns = t, .addr = u64(r.i("address")), .bytes = u64(r.i("bytes")), .kind = kind,
                                 .device = device, .correlation = u64(r.i("correlationId"))});
    });
  }

  Db db_;
  Trace trace_;
  std::map<std::string, bool> present_;
  std::unordered_map<std::int64_t, StringId> strings_;
  std::map<std::int64_t, MemKind> mem_kinds_;
  std::map<std::pair<std::int32_t, std::uint64_t>, bool> streams_;
};

}  // namespace

Trace import_nsys(const std::string& path) { return NsysImporter(path).run(); }

}  // namespace gpudiag
