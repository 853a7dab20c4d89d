// The one in-memory event model. The .gdtrace reader and every importer
// (Kineto JSON, nsys SQLite) produce a Trace; every analysis, detector and
// exporter reads only a Trace.
//
// Layout: one vector of small PODs per event kind (columns), strings and
// stacks interned and referenced by id. Times are nanoseconds on the source's
// clock (monotonic for .gdtrace, the profiler's for imports); use
// Trace::begin_ns() as the origin when presenting them.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpudiag/events.h"

namespace gpudiag {

// Bad input: unreadable file, unknown format, a JSON that is not a trace, a
// database of another schema. The message says which file and why.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class TraceSource : std::uint8_t { Gdtrace, Kineto, Nsys, TorchSnapshot, Memory /* built in code */ };
std::string_view to_string(TraceSource s);

// Interned strings; id 0 is always the empty string.
class StringTable {
 public:
  StringTable();
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  StringId intern(std::string_view s);
  std::string_view operator[](StringId id) const { return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view(); }
  std::size_t size() const { return strings_.size(); }
  // Id of s if already interned, else 0.
  StringId find(std::string_view s) const;

 private:
  std::deque<std::string> strings_;  // a deque never moves its elements, so
  std::unordered_map<std::string_view, StringId> index_;  // these views stay valid
};

// A loaded executable or shared object, for symbolizing recorded addresses.
struct Module {
  StringId path = 0;
  std::uint64_t base = 0;  // load address (l_addr: runtime = file vaddr + base)
  std::uint64_t size = 0;  // extent of its mapped segments from the lowest
  std::uint64_t low = 0;   // lowest mapped runtime address
};

// One frame: a return address, and symbols when the source had them (imports)
// or symbolize() filled them in.
struct StackFrame {
  std::uint64_t ip = 0;
  StringId function = 0;
  StringId file = 0;
  std::uint32_t line = 0;
  std::int32_t module = -1;  // index into Trace::modules, -1 unknown
};

struct Stack {
  std::vector<StackFrame> frames;  // innermost first
  // frames[0] is the instruction that faulted (a crash's stack), not a
  // return address: symbolized as it is, not as the call before it.
  bool starts_at_fault = false;
};

// The traced process died of a fatal signal (recorded by its crash handler).
struct Crash {
  std::uint64_t time_ns = 0;
  std::int32_t signal = 0;
  std::int32_t code = 0;       // si_code: SEGV_MAPERR, SEGV_ACCERR, ...
  std::uint64_t address = 0;   // si_addr: the faulting address for SIGSEGV/SIGBUS
  std::uint32_t tid = 0;
  StackId stack = 0;           // from the faulting instruction outwards
};

// A block that a caching allocator inside the process handed out, finer than
// the segments its CUDA calls show: PyTorch's, from the allocator history
// that `gpudiag trace` records beside a Python program's trace
// (<trace>.torch-memory.json, which load_trace reads).
struct CachedBlock {
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  std::int32_t device = 0;
  std::uint64_t addr = 0, bytes = 0;
  std::uint64_t stream = 0;        // the trace's id of the stream it was allocated on
  bool stream_known = false;       // no launch of the trace named that stream's handle
  std::uint64_t alloc_ns = 0;
  std::uint64_t free_requested_ns = kNever;  // the program dropped it
  std::uint64_t free_ns = kNever;            // the allocator may hand it out again
  StackId stack = 0, free_stack = 0;         // where it was allocated, and dropped
};

// A process's place in a distributed job.
struct JobPlace {
  std::int32_t rank = -1;  // -1: not said
  std::int32_t world_size = 0;  // 0: not said
  std::int32_t local_rank = -1;  // on its host; -1: not said
  std::string backend;  // the default process group's ("nccl", "gloo"), "" when not said
  std::string launcher;  // whose variables said the rank: "torchrun", "openmpi", "mpich", "slurm", "pytorch"
  std::string host;      // "" when not said
  // The trace's clock against the UNIX epoch, so that traces from several
  // processes and hosts share one time line: epoch ns = trace ns +
  // epoch_offset_ns. On one host the offset is exact to within
  // epoch_offset_uncertainty_ns (the two clocks are read back to back);
  // across hosts it is as good as their clocks' synchronisation (NTP: about
  // a millisecond, PTP: microseconds), which no trace can know.
  bool epoch_offset_known = false;
  std::int64_t epoch_offset_ns = 0;
  std::uint64_t epoch_offset_uncertainty_ns = 0;
  bool known() const { return rank >= 0 && world_size > 0; }
  // "rank 3 of 8 (nccl)"
  std::string label() const;
};

// One collective operation of a process group (all_reduce, broadcast, ...),
// as one rank saw it: from the host's call until the operation completed on
// that rank. A rank that waits for a late peer spends that wait inside it.
struct Collective {
  static constexpr std::int64_t kNoSeq = -1;
  StringId op = 0;      // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier", "send", "recv", ...
  StringId group = 0;   // the process group's name as the source gives it ("0"); 0: the default or not said
  // The group's own sequence number when the source says it (NCCL's and
  // record_param_comms' "Seq"); else kNoSeq, and the job report numbers a
  // group's collectives in the order the trace shows them.
  std::int64_t seq = kNoSeq;
  std::uint64_t bytes = 0;  // of the input, 0 when not said
  std::uint64_t begin_ns = 0, end_ns = 0;
  std::uint32_t tid = 0;      // the host thread that called it, 0 when not said
  std::int32_t device = kHostDevice;  // the GPU whose kernel ran it; kHostDevice for a host one (gloo on CPU tensors)
  std::uint64_t stream = 0;   // the trace's stream id of its kernel, 0 when it ran on none
  StackId stack = 0;          // the call's stack when the source has one
  // The trace ends inside it: it had not completed when the process stopped.
  bool unfinished = false;
};

struct Trace {
  // Where it came from.
  TraceSource source = TraceSource::Memory;
  std::string path;
  std::uint32_t format_version = 0;  // .gdtrace version, 0 for imports
  std::int64_t pid = 0;
  std::string command;  // command line of the traced process when known

  // Nothing is lost silently: events the recorder or profiler dropped, and
  // whether the file ended early (the process died mid-write).
  std::uint64_t dropped_events = 0;
  bool truncated = false;
  std::string truncation_note;  // e.g. "file ends inside a chunk at byte 81234"
  // Reading stopped at a corrupt chunk (bad tag, length, checksum or payload)
  // rather than where the file ends: the recording did not stop there, the
  // file is damaged, and whatever followed the corrupt chunk was not read.
  bool corrupt_chunk = false;
  // False for a .gdtrace without an End chunk: the process was killed while
  // recording (SIGKILL, the OOM killer) and the newest events of each thread
  // may be missing. A clean stop writes the End chunk, and so do the crash
  // handlers once every buffer is written. Imports and traces built in code
  // count as complete.
  bool stopped_cleanly = true;
  // Every thread's events that start before this time are in the trace; a
  // trace that lacks its end (cut, damaged, or its process killed) may miss
  // later ones.
  // kCompleteTrace when nothing is missing. Detectors judge what a trace does
  // not show (no free, no sync) only up to here: detect.h, within_evidence.
  static constexpr std::uint64_t kCompleteTrace = ~std::uint64_t{0};
  std::uint64_t complete_until_ns = kCompleteTrace;
  bool complete() const { return complete_until_ns == kCompleteTrace; }
  // A trace bounded in size (gpudiag trace --max-size) has every event
  // from this time on; before it, only what the recorder kept of the
  // segments it dropped: live allocations, errors, out-of-memory, the
  // first occurrence of each kind of event at each call site. 0: every
  // event was kept.
  std::uint64_t detail_from_ns = 0;
  bool bounded() const { return detail_from_ns != 0; }
  // Set on a bounded trace's detailed_part(): where the trace it came from
  // has every event. The run went on before it (not start-up), and what is
  // live at its end may be what a loop it does not show holds.
  std::uint64_t part_detail_from_ns = 0;
  bool detail_of_bounded() const { return part_detail_from_ns != 0; }

  // Where the traced process stood in a distributed job, as far as its trace
  // says: a .gdtrace's Identity chunk (its launcher's variables, its host,
  // its clock's offset), Kineto's distributedInfo.
  JobPlace job;

  StringTable strings;
  std::vector<Module> modules;
  // Set by symbolize(): modules whose frames got a function name but no
  // file:line, because reading their debug information would stall a report.
  std::vector<StringId> modules_without_lines;
  std::vector<Stack> stacks;  // index = StackId; stacks[0] is empty
  std::vector<DeviceDesc> devices;
  std::vector<StreamDesc> streams;

  std::vector<Alloc> allocs;
  std::vector<Free> frees;
  std::vector<Memcpy> memcpys;
  std::vector<Memset> memsets;
  std::vector<Kernel> kernels;
  std::vector<KernelArg> kernel_args;
  std::vector<Sync> syncs;
  std::vector<ApiCall> api_calls;
  std::vector<HostAccess> host_accesses;
  std::vector<OutOfMemory> ooms;
  std::vector<RaisedFinding> findings;
  std::vector<MemoryCounter> memory_counters;
  std::vector<Range> ranges;
  // Fatal signals, in time order: usually none or one (two threads may fault together).
  std::vector<Crash> crashes;
  // Collectives in time order. Importers read them from the source's own
  // records of them; for .gdtrace and nsys they are found in the NCCL kernels
  // and NVTX ranges (find_collectives). Not written to a .gdtrace.
  std::vector<Collective> collectives;
  // The process's exit status when the trace says it (0..255; 128+signal
  // when killed); -1 when not said.
  std::int32_t exit_status = -1;
  // From a caching allocator's own history, beside the trace file; not part
  // of the .gdtrace, so not written with it.
  std::vector<CachedBlock> cached_blocks;
  std::string allocator_history_note;  // why a history beside the trace could not be read

  Trace() : stacks(1) {}

  // Calls f(column) for every column of events (not devices, streams or
  // crashes): what reads, writes, counts or sorts all events goes through it.
  template <class F>
  void for_each_event_column(F&& f) {
    f(allocs), f(frees), f(memcpys), f(memsets), f(kernels), f(kernel_args), f(syncs), f(api_calls),
        f(host_accesses), f(ooms), f(findings), f(memory_counters), f(ranges);
  }
  template <class F>
  void for_each_event_column(F&& f) const {
    const_cast<Trace&>(*this).for_each_event_column([&](auto& column) { f(std::as_const(column)); });
  }

  std::string_view str(StringId id) const { return strings[id]; }
  StringId intern(std::string_view s) { return strings.intern(s); }
  // Adds a stack and returns its id (identical stacks are not merged here).
  StackId add_stack(Stack s);
  const Stack& stack(StackId id) const;

  // Number of events of every kind (not counting devices/streams).
  std::size_t event_count() const;
  // Earliest and latest timestamp of any event; 0 when there is none.
  std::uint64_t begin_ns() const;
  std::uint64_t end_ns() const;
  // Sorts every column by start time (importers call it once at the end).
  void sort_by_time();
  // Each sync with the API call of its correlation id, as CUPTI's
  // synchronisation records need (readers and importers call it once):
  // - they name no thread (a recorder writes them from the thread that
  //   drains CUPTI's buffers; nsys and Kineto leave it out): the thread that
  //   waited is the call's;
  // - CUPTI reports every stream or event query as a stream or event
  //   synchronisation, though the host did not wait. A query that found the
  //   work done ordered it: a Query sync. One that found it still running
  //   (cudaErrorNotReady) ordered nothing: dropped. The recorder has told
  //   them apart itself since it records Query syncs; older traces, nsys
  //   and Kineto need this.
  void join_syncs_with_their_calls();
  // Whether a call launched a kernel: a CUDA launch call, or one that names
  // the kernel it launched (gdrt's calls are named by their kernels).
  bool is_launch(const ApiCall& call) const;
  // A copy holding only the events that start before complete_until_ns, the part
  // whose evidence is whole (crashes stay: the process did die of them). For
  // analyses of a trace that lacks its end.
  Trace whole_part() const;
  // How many events whole_part() leaves out.
  std::size_t events_past_whole_part() const;
  // A copy holding the events from detail_from_ns on, where a bounded trace
  // has every event, and of the part before it only its allocations and
  // frees (live across the dropped part) and guarded faults: for analyses of
  // patterns and orderings (iterations, shares of time, a free before a
  // sync), which what was kept of the dropped part would skew or mislead.
  Trace detailed_part() const;
  // The description of a device, or nullptr.
  const DeviceDesc* device(std::int32_t id) const;
  // How reports name a device: "host", "device 0", or with the name the
  // trace gives it, "device 1000 (gdrt emu:0)".
  std::string device_label(std::int32_t id) const;
};

struct SymbolizeOptions {
  // Modules larger than this get function names from their symbol table but
  // no file:line: indexing the DWARF of a library of a gigabyte
  // (libtorch_cuda) takes longer than a report may.
  std::uint64_t max_module_bytes_for_lines = 512ull << 20;
};

// A C++ symbol's demangled name ("_Z5scalePfi" -> "scale(float*, int)"), or
// the name itself when it is not a mangled one.
std::string demangle(std::string_view name);

// Resolves the frames of every stack recorded as bare addresses (a .gdtrace
// from this machine) to function, file and line with libdw, when the modules
// are still present. Frames it cannot resolve keep their address. Each
// distinct address is resolved once; modules over the size limit are listed
// in modules_without_lines. Returns the number of frames resolved.
std::size_t symbolize(Trace& trace, const SymbolizeOptions& options = {});

}  // namespace gpudiag
