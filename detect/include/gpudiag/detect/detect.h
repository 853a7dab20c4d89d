// Runtime detectors: one per rule (detect/<rule_name>.cpp). Each reads
// only the Trace and the shared analyses and appends Findings; severities and
// names come from the catalogue.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpudiag/analysis/gpu_time.h"
#include "gpudiag/analysis/iterations.h"
#include "gpudiag/analysis/memory_timeline.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/finding.h"
#include "gpudiag/trace.h"

namespace gpudiag {

// Thresholds, with the defaults `gpudiag report --help` documents. A
// finding's severity follows its measured cost: below its rule's threshold
// it is a note, or nothing.
struct DetectOptions {
  std::uint64_t idle_gap_ns = 500'000'000;     // GD011: gaps longer than this (Nsight Systems: 500 ms)
  std::uint64_t short_kernel_ns = 50'000;      // GD011: kernels shorter than this are short (HTA: 50 us)
  double short_kernel_share = 0.5;             // GD011: launch-bound when at least this share of kernels is short
  std::uint64_t min_kernels = 20;              // GD011: kernel statistics need at least this many kernels
  double idle_share = 0.25;                    // GD011: said when the GPU idles (or copies) this share of the time
  std::uint64_t tiny_transfer_bytes = 8;       // GD005: a copy of at most this many bytes is tiny
  std::uint64_t tiny_transfer_count = 10;      // GD005: report from this many tiny copies on
  std::uint64_t tiny_reads_per_iteration = 8;  // GD005: when this many tiny reads come to an iteration or in a row
  double sync_share = 0.10;                    // GD010: a warning when syncs cost at least this share of the loop (host blocked, GPU idle)
  double syncs_per_iteration = 4.0;            // GD010: a note when this many a iteration block less than that
  double float64_share = 0.05;                 // GD002: a warning when Float64 kernels take this share of kernel time
  double pageable_share = 0.01;                // GD009: a warning when pageable async copies hold the host this share of the time judged
  std::size_t max_groups = 5;                  // stacks or names listed per finding
};

struct DetectContext {
  const Trace& trace;
  const MemoryTimeline& memory;
  const std::vector<GpuTime>& gpu_time;
  const DetectOptions& options;
  const RunPhases& phases;  // iterations, start-up and steady state
  // The rule of the detector running, whose findings make_finding(ctx, ...)
  // makes: run_detectors sets it from the detector's name, so a detector
  // never spells its own rule.
  const Rule* rule = nullptr;
};

using DetectFn = void (*)(const DetectContext&, std::vector<Finding>&);

struct Detector {
  std::string_view rule;  // the catalogue's rule name ("premature-free")
  DetectFn run;
};

// One detector per rule file detect/<rule_name>.cpp, which defines
// detect_<rule_name> (the list is generated from the files' names).
std::span<const Detector> rule_detectors();

// Every pass over a trace: the rule detectors, then the pass that turns
// findings the traced process raised itself into Findings (any rule).
std::span<const Detector> detectors();

// Runs every detector; findings ordered by rule id, then as each detector emits.
// Throws std::logic_error when a detector's name is no rule of the catalogue.
std::vector<Finding> run_detectors(const DetectContext& context);
// Runs the detectors of the rules named (catalogue names), in the same order.
std::vector<Finding> run_detectors(const DetectContext& context, std::span<const std::string_view> rules);

// Helpers for detectors.
// A Finding of the rule whose detector runs (ctx.rule), with the catalogue's
// severity; throws std::logic_error outside a rule's detector.
Finding make_finding(const DetectContext& ctx, std::string message);
// A Finding of `rule` with the catalogue's severity.
Finding make_finding(const Rule& rule, std::string message);
// The catalogue's rule of that name ("out-of-memory"), for a detector that
// names another rule than its own; throws std::logic_error when the catalogue
// has none, so a misspelt or removed rule fails at once.
const Rule& rule_named(std::string_view name);
// The frames of a recorded stack, innermost first, from the program's own
// call: the leading frames inside the CUDA libraries (libcuda, libcudart,
// libcupti, cuDNN, cuBLAS) and gpudiag's are dropped, except from a crash's
// stack, which starts where it faulted.
std::vector<Frame> frames_of(const Trace& trace, StackId stack);
// How reports name where a frame is: "train_step(int) (train.cpp:88)"; the
// function alone when no file is known; its address when no function is.
std::string frame_text(const Frame& frame);
// The file name of the module a frame is in ("libcudnn.so.9"), or "" when
// the trace does not say.
std::string_view module_file(const Trace& trace, const StackFrame& frame);
// "the program crashed: SIGSEGV (address not mapped at 0x7f..) on thread 12, in main at train.cu:40".
std::string describe_crash(const Trace& trace, const Crash& crash);
// Crashes whose address is a memory access that faulted (SIGSEGV, SIGBUS).
bool is_memory_fault(const Crash& crash);

// "1.5 MiB", "12 B".
std::string format_bytes(std::uint64_t bytes);
// "1.25 ms", "830 us", "2.1 s".
std::string format_duration(std::uint64_t ns);

// Kernel launches by correlation id, for the detectors that read kernel
// arguments: the launch call (ApiKind::Launch) and the kernel's execution.
class Launches {
 public:
  explicit Launches(const Trace& trace);
  // The launch call, or nullptr.
  const ApiCall* call(std::uint64_t correlation) const;
  // The kernel's execution on the device, or nullptr (a faulting kernel's
  // record may never arrive).
  const Kernel* kernel(std::uint64_t correlation) const;
  // What was launched, demangled: the kernel's name, else the launch call's
  // symbol, else "a kernel".
  std::string kernel_name(std::uint64_t correlation) const;
  std::string kernel_name(const ApiCall& launch) const;
  // Where the launch that passed `arg` was made: its own stack, else its
  // launch call's.
  StackId stack(const KernelArg& arg) const;

 private:
  const Trace& trace_;
  std::unordered_map<std::uint64_t, std::uint32_t> calls_;    // correlation -> api_calls index
  std::unordered_map<std::uint64_t, std::uint32_t> kernels_;  // correlation -> kernels index
};

// A kernel argument the driver knew as memory the GPU reads: device, pinned
// or managed. Pageable memory is GD001's; an unknown one is a number.
bool is_gpu_pointer(const KernelArg& a);
// The allocation, on any device or the host, that holds addr at time t, or nullptr.
const Block* block_holding(const MemoryTimeline& memory, std::uint64_t addr, std::uint64_t t);
// A kernel argument the GPU cannot read: host memory the driver does not know
// (malloc, new, the stack). Where the trace's own allocations say the address
// is pinned, managed or device memory, they are believed.
bool is_pageable_argument(const MemoryTimeline& memory, const KernelArg& arg);

// Errors a faulting kernel leaves in its context (700 illegal address, 719
// launch failure, ...): the next call that waits for the device returns it,
// and so does every call after it.
bool is_kernel_error(std::int32_t status);
// The status with the CUDA runtime's text: 700 "an illegal memory access was
// encountered"; the bare number when the text is not known.
std::string cuda_error_text(std::int32_t status);
// cudaGetLastError and cudaPeekAtLastError: they return an earlier call's error.
bool reports_earlier_error(std::string_view api_name);
// A call that waited for the device or a stream and succeeded: the work it
// waited for finished cleanly.
bool is_successful_synchronize(const Trace& trace, const ApiCall& call);
// The first call after `time` that returned a kernel error, when no
// successful synchronisation came between (which would show that what was
// launched by `time` had finished cleanly); nullptr when none. A
// cudaGetLastError counts: a program that checks each launch with it may
// learn of a kernel's fault there first, and exit.
const ApiCall* kernel_error_after(const Trace& trace, std::uint64_t time);

// GD002: the demangled name says the kernel computes in double precision.
bool is_float64_kernel(std::string_view demangled_name);

}  // namespace gpudiag
