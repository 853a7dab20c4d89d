// A PyTorch profiler trace shows one collective several times over:
//
//   c10d::allreduce_              the call, on the calling thread
//     record_param_comms          c10d's record of it: name, sizes, group, seq
//       nccl:all_reduce           an annotation naming it again
//         cudaLaunchKernel   ->   ncclDevKernel_AllReduce_...  on a GPU stream
//
// and with gloo, which has no kernel and no record in many versions:
//
//   c10d::allreduce_              the call, which only queues the work
//   gloo:all_reduce               on one of gloo's worker threads: the
//                                 collective itself, waiting for its peers
//                                 included, begun after the call queued it
//
// Each becomes one collective: the record where there is one, else the call;
// from its begin, as the program called it, to the end of what ran it (its
// kernels, or gloo's run). The worker's run is no collective of its own
// since the call it serves is: a gloo annotation is given to the earliest
// call of its collective that is still waiting for one and began before it
// (gloo's workers take the queued work in order), and is a collective of its
// own only when no call of it is in the trace (the profiler started after
// the call). A kernel belongs to the record whose "External id" it carries
// (Kineto links them), else to the record or call its launch lies in.
#include "kineto_collectives.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "gpudiag/import/collectives.h"

namespace gpudiag::import {
namespace {

using Kind = KinetoCommEvent::Kind;

// Where on a thread a host event stands, to find what encloses a time.
struct Span {
  std::uint64_t begin = 0, end = 0;
  std::int64_t collective = -1;  // index into Assembler::found_; -1: a record of no collective ("wait")
};

class Assembler {
 public:
  Assembler(Trace& trace, const KinetoComms& comms) : trace_(trace), comms_(comms) {}

  void run() {
    for (const KinetoCommEvent& e : comms_.host) by_kind_[static_cast<int>(e.kind)].push_back(&e);
    for (auto& events : by_kind_)
      std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) { return a->begin_ns < b->begin_ns; });
    records();
    calls();
    for (auto& [tid, spans] : spans_)
      std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    kernels();
    runs();
    const bool kernels_seen = !comms_.kernels.empty();
    std::unordered_set<StringId> ops_run;  // ops gloo's workers were seen running
    for (const KinetoCommEvent* r : of(Kind::Run)) ops_run.insert(r->op);
    trace_.collectives.clear();
    for (Found& f : found_) {
      // Its end is missing where the trace shows how such collectives end
      // (NCCL's kernels, gloo's runs of that collective) and this one's is
      // not there: it had not ended when the profiler stopped.
      if (!f.completed && f.from_host && (kernels_seen || ops_run.count(f.c.op))) f.c.unfinished = true;
      trace_.collectives.push_back(f.c);
    }
    settle_collectives(trace_, comms_.window_end_ns ? *comms_.window_end_ns : last_end());
  }

 private:
  struct Found {
    Collective c;
    bool from_host = false;  // a record or a call, which something else completes
    bool completed = false;  // a kernel or a gloo run of it is in the trace
  };

  // Without Kineto's window, the trace ends with its last event: host ops
  // other than these are not kept.
  std::uint64_t last_end() const {
    std::uint64_t end = trace_.end_ns();
    for (const KinetoCommEvent& e : comms_.host) end = std::max(end, e.end_ns);
    return end;
  }

  std::vector<const KinetoCommEvent*>& of(Kind k) { return by_kind_[static_cast<int>(k)]; }

  // The event of `events` (one kind, in time order) on thread tid that
  // encloses [begin, end], if any; c10d's calls on one thread do not nest.
  static const KinetoCommEvent* enclosing(const std::vector<const KinetoCommEvent*>& events, std::uint32_t tid,
                                          std::uint64_t begin, std::uint64_t end) {
    auto after = std::upper_bound(events.begin(), events.end(), begin, [](std::uint64_t t, auto* e) { return t < e->begin_ns; });
    for (auto it = after; it != events.begin();) {
      const KinetoCommEvent* e = *--it;
      if (e->tid == tid) return e->end_ns >= end ? e : nullptr;
    }
    return nullptr;
  }

  // The first NCCL annotation inside record r, on its thread.
  static const KinetoCommEvent* inner_annotation(const std::vector<const KinetoCommEvent*>& annotations, const KinetoCommEvent& r) {
    auto it = std::lower_bound(annotations.begin(), annotations.end(), r.begin_ns, [](auto* e, std::uint64_t t) { return e->begin_ns < t; });
    for (; it != annotations.end() && (*it)->begin_ns <= r.end_ns; ++it)
      if ((*it)->tid == r.tid && (*it)->end_ns <= r.end_ns && (*it)->op != 0) return *it;
    return nullptr;
  }

  void records() {
    const auto& calls = of(Kind::Call);
    const auto& annotations = of(Kind::Annotation);
    for (const KinetoCommEvent* r : of(Kind::Record)) {
      StringId op = r->op;
      // Older PyTorch's records name nothing: the call around them does,
      // or the annotation inside, which has the tensor's shape with
      // record_shapes where the record has only a list.
      std::uint64_t bytes = r->bytes;
      if (op == 0 && !r->named) {
        if (const KinetoCommEvent* call = enclosing(calls, r->tid, r->begin_ns, r->end_ns)) op = call->op;
        const KinetoCommEvent* inside = inner_annotation(annotations, *r);
        if (op == 0 && inside) op = inside->op;
        if (bytes == 0 && inside) bytes = inside->bytes;
      }
      std::int64_t index = -1;
      if (op != 0) {
        index = static_cast<std::int64_t>(found_.size());
        found_.push_back({Collective{.op = op, .group = r->group, .seq = r->seq, .bytes = bytes, .begin_ns = r->begin_ns,
                                     .end_ns = r->end_ns, .tid = r->tid},
                          true});
      }
      if (r->external_id >= 0) record_of_.emplace(r->external_id, index);
      spans_[r->tid].push_back({r->begin_ns, r->end_ns, index});
    }
  }

  // A call with no record inside is a collective of its own (gloo, or
  // PyTorch from before record_param_comms).
  void calls() {
    const auto& records = of(Kind::Record);
    for (const KinetoCommEvent* c : of(Kind::Call)) {
      if (c->op == 0) continue;
      const bool recorded = std::any_of(
          std::lower_bound(records.begin(), records.end(), c->begin_ns, [](auto* e, std::uint64_t t) { return e->begin_ns < t; }),
          std::upper_bound(records.begin(), records.end(), c->end_ns, [](std::uint64_t t, auto* e) { return t < e->begin_ns; }),
          [&](auto* r) { return r->tid == c->tid; });
      if (recorded) continue;
      spans_[c->tid].push_back({c->begin_ns, c->end_ns, static_cast<std::int64_t>(found_.size())});
      found_.push_back({Collective{.op = c->op, .begin_ns = c->begin_ns, .end_ns = c->end_ns, .tid = c->tid}, true});
    }
  }

  void kernels() {
    std::unordered_map<std::uint64_t, const ApiCall*> launch_of;
    for (const ApiCall& a : trace_.api_calls)
      if (a.correlation != 0) launch_of.emplace(a.correlation, &a);
    for (const KinetoCommKernel& k : comms_.kernels) {
      const auto launch = k.correlation != 0 ? launch_of.find(k.correlation) : launch_of.end();
      const ApiCall* call = launch != launch_of.end() ? launch->second : nullptr;
      std::optional<std::int64_t> owner;
      if (auto it = record_of_.find(k.external_id); k.external_id >= 0 && it != record_of_.end()) owner = it->second;
      else if (call) owner = span_at(call->tid, call->start_ns);
      if (owner) {
        if (*owner >= 0) ran(found_[static_cast<std::size_t>(*owner)], k);
        continue;  // a kernel of a record of no collective (a coalesced group's) is not one
      }
      Collective c{.op = k.op, .group = k.group, .seq = k.seq, .bytes = k.bytes, .begin_ns = k.start_ns, .end_ns = k.end_ns,
                   .device = k.device, .stream = k.stream};
      if (call) c.tid = call->tid;
      found_.push_back({c, false, true});
    }
  }

  std::optional<std::int64_t> span_at(std::uint32_t tid, std::uint64_t t) {
    auto it = spans_.find(tid);
    if (it == spans_.end()) return std::nullopt;
    const auto& spans = it->second;
    // A call with a record inside is no span: those on one thread follow
    // each other, and only the last begun by t can hold it.
    auto after = std::upper_bound(spans.begin(), spans.end(), t, [](std::uint64_t v, const Span& s) { return v < s.begin; });
    if (after == spans.begin() || std::prev(after)->end < t) return std::nullopt;
    return std::prev(after)->collective;
  }

  // Its end is its last kernel's.
  static void ran(Found& f, const KinetoCommKernel& k) {
    f.c.end_ns = f.completed ? std::max(f.c.end_ns, k.end_ns) : k.end_ns;
    if (!f.completed) f.c.device = k.device, f.c.stream = k.stream;
    f.completed = true;
  }

  void runs() {
    std::map<StringId, std::deque<std::size_t>> waiting;  // per op, the calls with no run yet, in time order
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < found_.size(); ++i)
      if (found_[i].from_host && !found_[i].completed) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return found_[a].c.begin_ns < found_[b].c.begin_ns; });
    for (std::size_t i : order) waiting[found_[i].c.op].push_back(i);
    for (const KinetoCommEvent* r : of(Kind::Run)) {
      if (r->op == 0) continue;
      auto& queue = waiting[r->op];
      if (!queue.empty() && found_[queue.front()].c.begin_ns <= r->begin_ns) {
        Found& f = found_[queue.front()];
        queue.pop_front();
        f.c.end_ns = r->end_ns;
        if (f.c.bytes == 0) f.c.bytes = r->bytes;
        f.completed = true;
        continue;
      }
      // The worker's thread is not the caller's: the caller is not said.
      found_.push_back({Collective{.op = r->op, .bytes = r->bytes, .begin_ns = r->begin_ns, .end_ns = r->end_ns}, false, true});
    }
  }

  Trace& trace_;
  const KinetoComms& comms_;
  std::vector<const KinetoCommEvent*> by_kind_[4];
  std::vector<Found> found_;
  std::unordered_map<std::int64_t, std::int64_t> record_of_;  // a record's external id -> its collective, -1 for none
  std::map<std::uint32_t, std::vector<Span>> spans_;
};

}  // namespace

void add_kineto_collectives(Trace& trace, const KinetoComms& comms) { Assembler(trace, comms).run(); }

}  // namespace gpudiag::import
