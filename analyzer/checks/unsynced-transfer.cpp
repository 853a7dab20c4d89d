// GD003 unsynced-transfer: the host reads the destination of an asynchronous
// device-to-host copy, or managed or pinned memory a kernel launch writes,
// before a synchronisation that covers the copy's (the launch's) stream.
// Flow-sensitive over the CFG; a sync of another stream does not count.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

#include "check.h"
#include "cuda_model.h"
#include "flow.h"
#include "function_facts.h"
#include "guards.h"
#include "host_uses.h"
#include "kernel_writes.h"
#include "query_branches.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

// Work still writing a host buffer: an asynchronous copy, or a kernel launch
// (k<<<...>>> or cudaLaunchKernel) given managed or pinned memory it stores to.
struct Pending {
  std::string stream;
  const CallExpr* copy;  // the copy or the launch
  bool kernel = false;
  bool assumed = false;  // the kernel's body is not in the file: taken to write
  MemKind memory = MemKind::HostPinned;  // what a launch writes
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
  std::map<const ValueDecl*, std::set<Pending>> captured;
  // Copies a sync has covered that runs on every path the copy ran on
  // (`if (async) copy; ... if (async) sync;`): still pending on paths that
  // skipped that sync, which are paths that never made the copy.
  std::set<const CallExpr*> settled;

  bool join(const State& other) {
    bool changed = false;
    for (const auto* copy : other.settled) changed |= settled.insert(copy).second;
    for (const auto& stream : other.capturing) changed |= capturing.insert(stream).second;
    for (const auto& [decl, copies] : other.captured)
      for (const auto& copy : copies) changed |= captured[decl].insert(copy).second;
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
    collect_device_aliases(facts.function().getBody());
    status_ = status_queries(facts.function().getBody());
    run_forward(
        *facts.cfg(), State{}, [this](const Stmt* stmt, State& state, bool report) { step(stmt, state, report); },
        [this](const CFGBlock& from, unsigned successor, State& state) { branch(from, successor, state); });
  }

 private:
  // `touches`: the host really reads or writes the memory (a dereference,
  // memcpy, fwrite, a helper of the file that dereferences it). A launch's
  // memory is often only handed on (to the next kernel, to a library), so
  // only such a touch counts against a kernel; a copy's counts any use.
  void read(const Stmt* where, const Expr* pointer, State& state, bool report, bool touches = true) {
    const ValueDecl* decl = pointer_base(pointer);
    if (decl == nullptr) return;
    auto it = state.pending.find(decl);
    if (it == state.pending.end()) return;
    const auto unsettled = std::find_if(it->second.begin(), it->second.end(), [&](const Pending& p) {
      return (touches || !p.kernel) && !state.settled.count(p.copy);
    });
    if (unsettled == it->second.end()) return;
    const Pending pending = *unsettled;
    if (touches) state.pending.erase(it);
    else std::erase_if(it->second, [](const Pending& p) { return !p.kernel; });
    if (!report || !reported_.insert(pending.copy).second) return;
    if (pending.kernel) return report_kernel(where, decl, pending);
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

  void report_kernel(const Stmt* where, const ValueDecl* decl, const Pending& pending) {
    const SourceManager& sm = facts_->source_manager();
    const auto launch = launch_args(pending.copy);
    const std::string kernel =
        launch && launch->kernel != nullptr ? "'" + launch->kernel->getNameAsString() + "'" : "the kernel";
    const bool writes = host_writes(where);
    std::string message = "'" + decl->getNameAsString() + "' (" + std::string(describe(pending.memory)) + ") is " +
                          (writes ? "written" : "read") + " on the host while kernel " + kernel + ", launched on " +
                          stream_label(pending.stream) + ", may still be writing it; " +
                          (writes ? "one of the two writes may overwrite the other"
                                  : "the host sees stale or partial data") +
                          ". Call cudaStreamSynchronize on that stream (or cudaEventSynchronize on an event "
                          "recorded after the launch) before " +
                          (writes ? "writing" : "reading");
    if (pending.assumed)
      message += " (" + kernel + " has no body in this file: it is taken to write through its non-const "
                 "pointer parameters)";
    Finding finding = make(sm, where->getBeginLoc(), std::move(message));
    note(finding, sm, pending.copy->getBeginLoc(), "the launch that writes it");
    Check::report(std::move(finding), where->getBeginLoc(), sm);
  }

  // The parent of `access` past parentheses, or null.
  DynTypedNode parent_of(const Stmt* access) const {
    DynTypedNode node = DynTypedNode::create(*access);
    for (int depth = 0; depth < 8; ++depth) {
      const auto parents = facts_->context().getParents(node);
      if (parents.empty()) return {};
      node = parents[0];
      if (node.get<ParenExpr>() == nullptr) return node;
    }
    return {};
  }

  // Does a dereference touch the memory? Not &p[i] (an address), nor a
  // volatile access (a flag the host polls while the kernel runs, on purpose).
  bool touches(const Expr* access) const {
    if (access->getType().isVolatileQualified()) return false;
    const auto* unary = parent_of(access).get<UnaryOperator>();
    return unary == nullptr || unary->getOpcode() != UO_AddrOf;
  }

  // Is the access the target of a plain assignment (p[i] = v)?
  bool host_writes(const Stmt* access) const {
    const auto* assign = parent_of(access).get<BinaryOperator>();
    return assign != nullptr && assign->getOpcode() == BO_Assign && assign->getLHS()->IgnoreParens() == access;
  }

  // cudaHostGetDevicePointer(&device, host, 0): a launch given `device`
  // writes `host`'s memory. Only a pointer set from one host buffer counts.
  void collect_device_aliases(const Stmt* body) {
    device_aliases_.clear();
    std::set<const ValueDecl*> ambiguous;
    for_each_stmt(body, [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      const std::string name = call != nullptr ? callee_name(call) : "";
      if (name != "cudaHostGetDevicePointer" && name != "cuMemHostGetDevicePointer" &&
          name != "cuMemHostGetDevicePointer_v2")
        return;
      const ValueDecl* device = pointer_base(call_arg(call, 0));
      const Expr* host = call_arg(call, 1);
      if (device == nullptr || host == nullptr) return;
      auto [it, fresh] = device_aliases_.try_emplace(device, host);
      if (!fresh && pointer_base(it->second) != pointer_base(host)) ambiguous.insert(device);
    });
    for (const ValueDecl* device : ambiguous) device_aliases_.erase(device);
  }

  // A launch writes the managed or pinned memory it is given through a
  // parameter its kernel stores through. Device memory the host cannot read
  // (GD001's), and pageable memory the kernel cannot reach, are not this rule's.
  void launched(const LaunchArgs& launch, const CallExpr* call, State& state) {
    const std::string stream = stream_key(launch.stream, facts_->context());
    for (unsigned i = 0; i < launch.args.size(); ++i) {
      const ValueDecl* decl = nullptr;
      const Origin* origin = facts_->origin_of(launch.args[i], &decl);
      if (origin == nullptr && decl != nullptr)
        if (auto alias = device_aliases_.find(decl); alias != device_aliases_.end())
          origin = facts_->origin_of(alias->second, &decl);
      if (origin == nullptr || decl == nullptr || (origin->kind != MemKind::Managed && origin->kind != MemKind::HostPinned))
        continue;
      // A volatile pointee is memory the kernel shares with the host while it
      // runs (a flag one side sets and the other polls), on purpose.
      const QualType param = launch.kernel != nullptr && i < launch.kernel->getNumParams()
                                 ? launch.kernel->getParamDecl(i)->getType()
                                 : launch.args[i]->IgnoreParenImpCasts()->getType();
      if (param->isPointerType() && param->getPointeeType().isVolatileQualified()) continue;
      ParamWrite writes = ParamWrite::No;
      if (launch.kernel != nullptr) {
        writes = kernel_writes_.writes(launch.kernel, i);
      } else if (const QualType type = launch.args[i]->IgnoreParenImpCasts()->getType();
                 type->isPointerType() && !type->getPointeeType().isConstQualified()) {
        writes = ParamWrite::Assumed;  // launched through a pointer: no body to read
      }
      if (writes == ParamWrite::No) continue;
      const Pending pending{stream, call, true, writes == ParamWrite::Assumed, origin->kind};
      if (state.capturing.count(stream)) state.captured[decl].insert(pending);
      else state.pending[decl].insert(pending);
      state.settled.erase(call);
    }
  }

  void step(const Stmt* stmt, State& state, bool report) {
    if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(stmt))
      return read(stmt, subscript->getBase(), state, report, touches(subscript));
    if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->getOpcode() == UO_Deref)
      return read(stmt, unary->getSubExpr(), state, report, touches(unary));
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(stmt)) {
      if (op->getOperator() == OO_Subscript || op->getOperator() == OO_Star)
        read(stmt, op->getArg(0), state, report, touches(op));
      return;
    }
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->getOpcode() == BO_Assign) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(binary->getLHS()->IgnoreParenImpCasts()))
        state.pending.erase(ref->getDecl());
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    if (const auto launch = launch_args(call)) return launched(*launch, call, state);
    if (isa<CUDAKernelCallExpr>(call)) return;
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
        const Pending pending{stream, call};
        if (state.capturing.count(stream)) {
          state.captured[dst].insert(pending);
        } else {
          // The copy replaces the copies before it; launches still writing stay.
          auto& writers = state.pending[dst];
          std::erase_if(writers, [](const Pending& p) { return !p.kernel; });
          writers.insert(pending);
        }
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
        for (Pending copy : copies) {
          copy.stream = stream;
          state.pending[decl].insert(copy);
        }
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
    // What touches a launch's memory: memcpy & co, fwrite & co, a helper that dereferences it or writes it to a file.
    std::set<const Expr*> touched;
    for_each_host_dereference(call, [&](const Stmt* where, const Expr* pointer) {
      if (where == call) touched.insert(pointer);
    });
    if (const Expr* buffer = file_write_buffer(call)) touched.insert(buffer);
    const Provenance* provenance = facts_->provenance();
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const bool freed = helper != nullptr && std::any_of(helper->frees.begin(), helper->frees.end(),
                                                          [&](const FreeEffect& free) {
                                                            return argument_for(call, HandleRef{int(free.param), {}}) ==
                                                                   call->getArg(i);
                                                          });
      const bool touches = touched.count(call->getArg(i)) > 0 ||
                           (provenance != nullptr && (provenance->dereferences_on_host(*call, i) != nullptr ||
                                                      provenance->writes_to_file(*call, i) != nullptr));
      if (!freed) read(call, call->getArg(i), state, report, touches);
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
  KernelWrites kernel_writes_;  // per translation unit, as the check is
  std::map<const ValueDecl*, const Expr*> device_aliases_;
  std::set<std::string> nonblocking_;
  StatusQueries status_;
  std::set<const CallExpr*> reported_;
};

GPUDIAG_REGISTER_CHECK(UnsyncedTransfer, "unsynced-transfer");

}  // namespace
}  // namespace gpudiag::lint
