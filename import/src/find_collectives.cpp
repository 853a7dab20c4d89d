// Collectives of traces that have no record of them as such (.gdtrace,
// nsys): NCCL's kernels, and the NVTX ranges NCCL opens around its calls.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "collective_names.h"
#include "gpudiag/import/collectives.h"

namespace gpudiag {
namespace {

// Where on a thread a launch makes the kernels of some collectives: an
// NCCL call's own range, or the ncclGroupEnd that launches the calls of its
// group (the calls in between only queue their work).
struct LaunchSpan {
  std::uint64_t begin = 0, end = 0;
  std::vector<std::size_t> collectives;  // indexes into Finder::found_
};

class Finder {
 public:
  explicit Finder(Trace& trace) : trace_(trace) {}

  void run() {
    calls_from_ranges();
    std::unordered_map<std::uint64_t, const ApiCall*> call_of;  // by correlation
    for (const ApiCall& a : trace_.api_calls)
      if (a.correlation != 0 && (call_of.find(a.correlation) == call_of.end() || trace_.is_launch(a)))
        call_of[a.correlation] = &a;
    std::unordered_set<std::uint64_t> with_kernel;
    for (const Kernel& k : trace_.kernels) {
      const auto op = import::nccl_kernel_op(trace_.str(k.name));
      if (!op) continue;
      seen_nccl_work_ = true;
      if (k.correlation != 0) with_kernel.insert(k.correlation);
      const auto it = k.correlation != 0 ? call_of.find(k.correlation) : call_of.end();
      const ApiCall* launch = it != call_of.end() ? it->second : nullptr;
      if (LaunchSpan* span = launch ? span_at(launch->tid, launch->start_ns) : nullptr) {
        for (std::size_t i : span->collectives) ran(i, k, *launch);
        continue;
      }
      Collective c{.op = trace_.intern(*op), .begin_ns = k.start_ns, .end_ns = k.end_ns, .device = k.device, .stream = k.stream};
      if (launch) c.tid = launch->tid, c.stack = launch->stack;
      found_.push_back({c, true});
    }
    // A launch whose kernel never came: the process stopped (killed while a
    // peer was missing, crashed) before the collective completed.
    for (const ApiCall& a : trace_.api_calls) {
      if (a.symbol == 0 || a.correlation == 0 || with_kernel.count(a.correlation)) continue;
      const auto op = import::nccl_kernel_op(trace_.str(a.symbol));
      if (!op) continue;
      seen_nccl_work_ = true;
      if (span_at(a.tid, a.start_ns)) continue;  // a call's, marked below
      found_.push_back({Collective{.op = trace_.intern(*op), .begin_ns = a.start_ns, .tid = a.tid, .device = a.device,
                                   .stack = a.stack, .unfinished = true},
                        false});
    }
    trace_.collectives.clear();
    for (Found& f : found_) {
      // A call whose kernel is missing where the trace shows NCCL's kernels
      // or launches of them ran to no end the trace saw; in a trace without
      // them (no GPU activity recorded) its range is all there is to go by.
      if (!f.ran && seen_nccl_work_) f.c.unfinished = true;
      trace_.collectives.push_back(f.c);
    }
    import::settle_collectives(trace_, trace_.end_ns());
  }

 private:
  struct Found {
    Collective c;
    bool ran = false;  // a kernel of it is in the trace
  };

  // NCCL's ranges, thread by thread in time order: each call a collective,
  // and the spans its kernels are launched in.
  void calls_from_ranges() {
    std::map<std::uint32_t, std::vector<const Range*>> by_tid;
    for (const Range& r : trace_.ranges)
      if (trace_.str(r.name).starts_with("nccl")) by_tid[r.tid].push_back(&r);
    for (auto& [tid, ranges] : by_tid) {
      std::stable_sort(ranges.begin(), ranges.end(), [](const Range* a, const Range* b) { return a->start_ns < b->start_ns; });
      std::vector<LaunchSpan>& spans = spans_[tid];
      int depth = 0;
      std::vector<std::size_t> group;
      for (const Range* r : ranges) {
        const std::string_view name = trace_.str(r->name);
        if (name == "ncclGroupStart") {
          ++depth;
        } else if (name == "ncclGroupEnd") {
          if (depth > 0 && --depth == 0 && !group.empty()) spans.push_back({r->start_ns, r->end_ns, std::exchange(group, {})});
        } else if (const std::string_view op = import::collective_op(name); !op.empty()) {
          found_.push_back({Collective{.op = trace_.intern(op), .begin_ns = r->start_ns, .end_ns = r->end_ns, .tid = tid}});
          const std::size_t i = found_.size() - 1;
          if (depth > 0) group.push_back(i);
          else spans.push_back({r->start_ns, r->end_ns, {i}});
        }
      }
    }
  }

  // The span a launch at `t` on thread `tid` lies in; NCCL's calls on one
  // thread follow each other, so it can only be the last one begun by then.
  LaunchSpan* span_at(std::uint32_t tid, std::uint64_t t) {
    auto it = spans_.find(tid);
    if (it == spans_.end()) return nullptr;
    auto& spans = it->second;
    auto after = std::upper_bound(spans.begin(), spans.end(), t, [](std::uint64_t v, const LaunchSpan& s) { return v < s.begin; });
    if (after == spans.begin()) return nullptr;
    LaunchSpan& span = *std::prev(after);
    return t <= span.end ? &span : nullptr;
  }

  // The kernel k, launched by `launch`, runs collective i: it ends with the
  // last of its kernels (a group's calls across several communicators share
  // their kernels, which no trace tells apart).
  void ran(std::size_t i, const Kernel& k, const ApiCall& launch) {
    Found& f = found_[i];
    f.c.end_ns = f.ran ? std::max(f.c.end_ns, k.end_ns) : k.end_ns;
    if (!f.ran) f.c.device = k.device, f.c.stream = k.stream;
    if (f.c.stack == 0) f.c.stack = launch.stack;
    f.ran = true;
  }

  Trace& trace_;
  std::vector<Found> found_;
  std::map<std::uint32_t, std::vector<LaunchSpan>> spans_;
  bool seen_nccl_work_ = false;  // an NCCL kernel or a launch of one
};

}  // namespace

void find_collectives(Trace& trace) { Finder(trace).run(); }

void import::settle_collectives(Trace& trace, std::uint64_t trace_end_ns) {
  for (Collective& c : trace.collectives) {
    if (c.unfinished) c.end_ns = std::max(c.begin_ns, trace_end_ns);
    else if (c.end_ns > trace_end_ns) c.unfinished = true;
    c.end_ns = std::max(c.end_ns, c.begin_ns);
  }
  std::stable_sort(trace.collectives.begin(), trace.collectives.end(),
                   [](const Collective& a, const Collective& b) { return a.begin_ns < b.begin_ns; });
}

}  // namespace gpudiag
