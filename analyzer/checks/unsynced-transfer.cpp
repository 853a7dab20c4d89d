// GD003 unsynced-transfer: the host reads the destination of an asynchronous
// device-to-host copy before a synchronisation that covers the copy's stream.
// Flow-sensitive over the CFG; a sync of another stream does not count.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <clang/AST/ExprCXX.h>

#include "check.h"
#include "cuda_model.h"
#include "flow.h"
#include "function_facts.h"
#include "guards.h"
#include "query_branches.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

struct Pending {
  std::string stream;
  const CallExpr* copy;
  bool operator<(const Pending& other) const { return copy < other.copy; }
};

struct State {
  std::map<const ValueDecl*, std::set<Pending>> pending;  // host buffer -> copies still writing it
  std::map<std::string, std::set<const CallExpr*>> events;  // event -> copies it covers
  // stream -> copies it was made to wait for (cudaStreamWaitEvent): a sync of
  // the stream, or an event recorded on it, covers them too.
  std::map<std::string, std::set<const CallExpr*>> waits;
  // Streams being captured into a graph, and the copies captured so far: they
  // run (on the launch stream) only when the graph is launched.
  std::set<std::string> capturing;
  std::map<const ValueDecl*, std::set<const CallExpr*>> captured;
  // Copies a sync has covered that runs on every path the copy ran on
  // (`if (async) copy; ... if (async) sync;`): still pending on paths that
  // skipped that sync, which are paths that never made the copy.
  std::set<const CallExpr*> settled;

  bool join(const State& other) {
    bool changed = false;
    for (const auto* copy : other.settled) changed |= settled.insert(copy).second;
    for (const auto& stream : other.capturing) changed |= capturing.insert(stream).second;
    for (const auto& [decl, copies] : other.captured)
      for (const auto* copy : copies) changed |= captured[decl].insert(copy).second;
    for (const auto& [decl, copies] : other.pending)
      for (const auto& copy : copies) changed |= pending[decl].insert(copy).second;
    for (const auto& [event, copies] : other.events)
      for (const auto* copy : copies) changed |= events[event].insert(copy).second;
    for (const auto& [stream, copies] : other.waits)
      for (const auto* copy : copies) changed |= waits[stream].insert(copy).second;
    return changed;
  }
  void forget(const std::function<bool(const Pending&)>& done) {
    for (auto& [decl, copies] : pending)
      for (auto it = copies.begin(); it != copies.end();) it = done(*it) ? copies.erase(it) : std::next(it);
  }
};

class UnsyncedTransfer : public FunctionCheck {
 protected:
  void check(const FunctionFacts& facts) override {
    if (!facts.uses_cuda() || facts.cfg() == nullptr) return;
    facts_ = &facts;
    reported_.clear();
    // Streams made non-blocking here, or in another function of the TU when
    // held in a global or a member.
    nonblocking_ = facts.nonblocking_streams();
    const auto& shared = function_facts().sync_summaries().shared_nonblocking_streams(facts.context());
    nonblocking_.insert(shared.begin(), shared.end());
    status_ = status_queries(facts.function().getBody());
    run_forward(
        *facts.cfg(), State{}, [this](const Stmt* stmt, State& state, bool report) { step(stmt, state, report); },
        [this](const CFGBlock& from, unsigned successor, State& state) { branch(from, successor, state); });
  }

 private:
  void read(const Stmt* where, const Expr* pointer, State& state, bool report) {
    const ValueDecl* decl = pointer_base(pointer);
    if (decl == nullptr) return;
    auto it = state.pending.find(decl);
    if (it == state.pending.end()) return;
    const auto unsettled = std::find_if(it->second.begin(), it->second.end(),
                                        [&](const Pending& p) { return !state.settled.count(p.copy); });
    if (unsettled == it->second.end()) return;
    const Pending pending = *unsettled;
    state.pending.erase(it);
    if (!report || !reported_.insert(pending.copy).second) return;
    const SourceManager& sm = facts_->source_manager();
    Finding finding = make(sm, where->getBeginLoc(),
                           "'" + decl->getNameAsString() + "' is read on the host while the asynchronous "
                           "device-to-host copy into it on " + stream_label(pending.stream) +
                               " may not have finished; the host sees stale or partial data. Call "
                               "cudaStreamSynchronize on that stream (or cudaEventSynchronize on an event "
                               "recorded after the copy) before reading");
    note(finding, sm, pending.copy->getBeginLoc(), "the asynchronous copy into it");
    Check::report(std::move(finding), where->getBeginLoc(), sm);
  }

  void step(const Stmt* stmt, State& state, bool report) {
    if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(stmt)) return read(stmt, subscript->getBase(), state, report);
    if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->getOpcode() == UO_Deref)
      return read(stmt, unary->getSubExpr(), state, report);
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(stmt)) {
      if (op->getOperator() == OO_Subscript || op->getOperator() == OO_Star) read(stmt, op->getArg(0), state, report);
      return;
    }
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->getOpcode() == BO_Assign) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(binary->getLHS()->IgnoreParenImpCasts()))
        state.pending.erase(ref->getDecl());
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr || isa<CUDAKernelCallExpr>(call)) return;
    const std::string name = callee_name(call);
    const SyncCall sync = as_sync(
        call, facts_->context(), [this](const Expr* pointer) { return facts_->origin_of(pointer); },
        function_facts().sync_summaries().helper_sync(facts_->context()));
    // A query waits only on the branch where it said the work is done (branch()).
    if (!is_query(call)) apply(sync, call, state);
    if (auto copy = as_copy(call); copy && copy->async) {
      const ValueDecl* dst = nullptr;
      const Origin* origin = facts_->origin_of(copy->dst, &dst);
      // A copy into pageable memory returns only when it is done (GD009 flags it instead).
      const bool pageable = origin != nullptr && origin->kind == MemKind::HostPageable;
      const bool into_host = copy->kind == CopyKind::DeviceToHost ||
                             (copy->kind == CopyKind::Default && origin != nullptr && origin->kind == MemKind::HostPinned);
      const std::string stream = stream_key(copy->stream, facts_->context());
      if (dst != nullptr && into_host && !pageable) {
        if (state.capturing.count(stream)) state.captured[dst].insert(call);
        else state.pending[dst] = {Pending{stream, call}};
        state.settled.erase(call);
      }
      return;
    }
    if (name == "cudaStreamBeginCapture" || name == "cuStreamBeginCapture") {
      state.capturing.insert(stream_key(call_arg(call, 0), facts_->context()));
      return;
    }
    if (name == "cudaStreamEndCapture" || name == "cuStreamEndCapture") {
      state.capturing.erase(stream_key(call_arg(call, 0), facts_->context()));
      return;
    }
    if (name == "cudaGraphLaunch" || name == "cuGraphLaunch") {
      // Any graph may hold the captured copies: they are pending on the launch stream now.
      const std::string stream = stream_key(call_arg(call, 1), facts_->context());
      for (const auto& [decl, copies] : state.captured)
        for (const auto* copy : copies) state.pending[decl].insert(Pending{stream, copy});
      return;
    }
    if (name == "cudaEventRecord" || name == "cudaEventRecordWithFlags" || name == "cuEventRecord" ||
        name == "cuEventRecordWithFlags") {
      // The event completes when the work queued on its stream before the
      // record has: it covers exactly the copies a sync of that stream would.
      const std::string stream = stream_key(call_arg(call, 1), facts_->context());
      const SyncCall on_stream = stream_sync(stream, facts_->context());
      auto& covered = state.events[stream_key(call_arg(call, 0), facts_->context())];
      covered.clear();
      for (const auto& [decl, copies] : state.pending)
        for (const auto& copy : copies)
          if (covers(on_stream, copy, state)) covered.insert(copy.copy);
      return;
    }
    if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") {
      // The host does not wait; later work on the stream (and a sync of it) does.
      const auto& covered = state.events[stream_key(call_arg(call, 1), facts_->context())];
      state.waits[stream_key(call_arg(call, 0), facts_->context())].insert(covered.begin(), covered.end());
      return;
    }
    if (sync.kind != SyncKind::None || name.empty() || is_cuda_runtime_api(name) || name == "free" ||
        name == "cudaFreeHost")
      return;
    // Handing the buffer to other host code reads it, unless that code (a
    // helper of the TU) only frees it, which GD004 judges.
    const FunctionSummary* helper = function_facts().sync_summaries().of(call->getDirectCallee(), facts_->context());
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const bool freed = helper != nullptr && std::any_of(helper->frees.begin(), helper->frees.end(),
                                                          [&](const FreeEffect& free) {
                                                            return argument_for(call, HandleRef{int(free.param), {}}) ==
                                                                   call->getArg(i);
                                                          });
      if (!freed) read(call, call->getArg(i), state, report);
    }
  }

  // The branch of a test of cudaStreamQuery / cudaEventQuery where the query
  // reported the work done has waited for it; the other branch, for nothing.
  void branch(const CFGBlock& from, unsigned successor, State& state) const {
    if (successor > 1 || from.succ_size() != 2) return;
    const auto* condition = dyn_cast_or_null<Expr>(from.getTerminatorCondition());
    for (const CallExpr* query : queries_done_on(condition, successor == 0, status_, facts_->context()))
      apply(query_wait(query, facts_->context()), query, state, false);
  }

  // Does waiting for `sync` (not an event) cover the copy?
  bool covers(const SyncCall& sync, const Pending& pending, const State& state) const {
    if (sync_covers(sync, pending.stream, nonblocking_)) return true;
    if (sync.kind != SyncKind::Stream) return false;
    auto waited = state.waits.find(sync.key);
    return waited != state.waits.end() && waited->second.count(pending.copy) > 0;
  }

  // `settles`: the sync waits whenever it runs (not only on one branch of a
  // test), so when it runs on every path the copy ran on, it settles the copy.
  void apply(const SyncCall& sync, const CallExpr* at, State& state, bool settles = true) const {
    if (sync.kind == SyncKind::None) return;
    const auto event = state.events.find(sync.key);
    const auto done = [&](const Pending& p) {
      const bool waited = sync.kind == SyncKind::Event
                              ? event != state.events.end() && event->second.count(p.copy) > 0
                              : covers(sync, p, state);
      if (waited && settles && runs_whenever(at, p.copy, facts_->function(), facts_->context()))
        state.settled.insert(p.copy);
      return waited;
    };
    state.forget(done);
  }

  const FunctionFacts* facts_ = nullptr;
  std::set<std::string> nonblocking_;
  StatusQueries status_;
  std::set<const CallExpr*> reported_;
};

GPUDIAG_REGISTER_CHECK(UnsyncedTransfer, "unsynced-transfer");

}  // namespace
}  // namespace gpudiag::lint
