// GD004 premature-free: memory freed while queued GPU work may still use it,
// used after it was freed, or freed twice. Flow-sensitive over the CFG.
#include <map>
#include <optional>
#include <set>
#include <string>

#include <clang/AST/ExprCXX.h>

#include "check.h"
#include "cuda_model.h"
#include "flow.h"
#include "function_facts.h"
#include "guards.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

struct State {
  // pointer -> stream -> the launch or async copy that may still use it
  std::map<const ValueDecl*, std::map<std::string, const Stmt*>> pending;
  // pointer -> the free, and whether it happened on every path (a double free
  // is only claimed then: frees under correlated conditions are common).
  std::map<const ValueDecl*, std::pair<const CallExpr*, bool>> freed;
  std::map<std::string, std::set<std::pair<const ValueDecl*, std::string>>> events;
  // Work a sync has covered that runs on every path the work ran on (`if
  // (async) copy; ... if (async) sync;`): still pending only on paths that
  // skipped the sync, which never queued the work.
  std::set<const Stmt*> settled;

  bool join(const State& other) {
    bool changed = false;
    for (const auto* work : other.settled) changed |= settled.insert(work).second;
    for (const auto& [decl, streams] : other.pending)
      for (const auto& [stream, where] : streams) changed |= pending[decl].emplace(stream, where).second;
    for (auto& [decl, entry] : freed) {
      auto it = other.freed.find(decl);
      if (entry.second && (it == other.freed.end() || !it->second.second)) {
        entry.second = false;
        changed = true;
      }
    }
    for (const auto& [decl, entry] : other.freed)
      if (freed.emplace(decl, std::make_pair(entry.first, false)).second) changed = true;
    for (const auto& [event, covered] : other.events)
      for (const auto& item : covered) changed |= events[event].insert(item).second;
    return changed;
  }
};

class PrematureFree : public FunctionCheck {
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
    collect_address_taken(facts.function().getBody());
    run_forward(*facts.cfg(), State{}, [this](const Stmt* stmt, State& state, bool report) { step(stmt, state, report); });
  }

 private:
  const SourceManager& sm() const { return facts_->source_manager(); }

  void use_after_free(const Stmt* use, const ValueDecl* decl, const State& state, bool report) {
    auto it = state.freed.find(decl);
    if (it == state.freed.end() || !report || !reported_.insert(use).second) return;
    Finding finding = make(sm(), use->getBeginLoc(),
                           "'" + decl->getNameAsString() + "' is used after " + callee_name(it->second.first) +
                               " freed it; the memory may already belong to another allocation. Move the free "
                               "after the last use (and after the work that uses it has finished)");
    note(finding, sm(), it->second.first->getBeginLoc(), "freed here");
    Check::report(std::move(finding), use->getBeginLoc(), sm());
  }

  // `stream`: the stream a stream-ordered free (cudaFreeAsync) runs on, when
  // known; `helper`: the function of the TU that called `name`, if any.
  void on_free(const CallExpr* call, const Expr* pointer, const std::string& name,
               const std::optional<std::string>& stream, const std::string& helper, State& state, bool report) {
    const std::string how = helper.empty() ? name : name + " in '" + helper + "'";
    const ValueDecl* decl = pointer_base(pointer);
    if (decl == nullptr) return;
    if (auto it = state.freed.find(decl); it != state.freed.end()) {
      if (it->second.second && report && reported_.insert(call).second) {
        Finding finding = make(sm(), call->getBeginLoc(),
                               "'" + decl->getNameAsString() + "' is freed twice; the second " + how +
                                   " may free memory that now belongs to someone else. Free it once, and set "
                                   "the pointer to nullptr after freeing");
        note(finding, sm(), it->second.first->getBeginLoc(), "first freed here");
        Check::report(std::move(finding), call->getBeginLoc(), sm());
      }
      return;
    }
    if (name == "cudaFreeAsync" || name == "cuMemFreeAsync") {
      for (const auto& [other, work] : state.pending[decl]) {
        if (!stream || other == *stream || state.settled.count(work) || !report || !reported_.insert(call).second)
          continue;
        Finding finding = make(sm(), call->getBeginLoc(),
                               "'" + decl->getNameAsString() + "' is freed (" + how + ") on " +
                                   stream_label(*stream) + " while work queued on " + stream_label(other) +
                                   " may still use it; free it on the stream that uses it, or make " +
                                   stream_label(*stream) + " wait for it first (cudaEventRecord + "
                                   "cudaStreamWaitEvent)");
        note(finding, sm(), work->getBeginLoc(), "this work on " + stream_label(other) + " uses it");
        Check::report(std::move(finding), call->getBeginLoc(), sm());
      }
    } else if (name != "cudaFreeHost") {
      // cudaFree waits for the device before releasing; other frees need no note.
      clear_all(state);
    }
    state.pending.erase(decl);
    state.freed[decl] = {call, true};
  }

  // free()/delete of a host buffer that an async copy may still read or write.
  void on_host_free(const Stmt* where, const Expr* pointer, State& state, bool report) {
    const ValueDecl* decl = pointer_base(pointer);
    if (decl == nullptr) return;
    auto it = state.pending.find(decl);
    // An async copy with pageable memory completes before it returns: nothing is pending.
    const Origin* origin = facts_->origin_of(pointer);
    const bool pageable = origin != nullptr && origin->kind == MemKind::HostPageable;
    const Stmt* copy = nullptr;
    std::string stream;
    if (it != state.pending.end() && !pageable)
      for (const auto& [key, work] : it->second)
        if (!isa<CUDAKernelCallExpr>(work) && !state.settled.count(work)) {
          copy = work;
          stream = key;
        }
    if (copy != nullptr && report && reported_.insert(where).second) {
      const Stmt* work = copy;
      Finding finding = make(sm(), where->getBeginLoc(),
                             "host buffer '" + decl->getNameAsString() + "' is freed while an asynchronous copy on " +
                                 stream_label(stream) + " may still be using it; call cudaStreamSynchronize "
                                 "(or an event sync) before freeing it");
      note(finding, sm(), work->getBeginLoc(), "the asynchronous copy that uses it");
      Check::report(std::move(finding), where->getBeginLoc(), sm());
    }
    state.pending.erase(decl);
  }

  void on_helper_free(const CallExpr* call, const FreeEffect& free, State& state, bool report) {
    const Expr* pointer = argument_for(call, HandleRef{int(free.param), {}});
    if (pointer == nullptr) return;
    if (free.how == "free" || free.how == "delete") return on_host_free(call, pointer, state, report);
    std::optional<std::string> stream;
    if (free.stream) stream = key_for(call, *free.stream, facts_->context());
    on_free(call, pointer, free.how, stream, callee_name(call), state, report);
  }

  static void clear_all(State& state) {
    state.pending.clear();
    state.events.clear();
  }

  void add_pending(const Expr* pointer, const std::string& stream, const Stmt* where, State& state, bool report) {
    const ValueDecl* decl = pointer_base(pointer);
    if (decl == nullptr || !decl->getType()->isPointerType()) return;
    if (state.freed.count(decl)) {
      use_after_free(where, decl, state, report);
      return;
    }
    state.pending[decl][stream] = where;
    state.settled.erase(where);
  }

  void step(const Stmt* stmt, State& state, bool report) {
    if (const auto* launch = dyn_cast<CUDAKernelCallExpr>(stmt)) {
      const std::string stream = stream_key(launch_stream(launch), facts_->context());
      for (const Expr* arg : launch->arguments()) add_pending(arg, stream, launch, state, report);
      return;
    }
    if (const auto* del = dyn_cast<CXXDeleteExpr>(stmt)) {
      on_host_free(del, del->getArgument(), state, report);
      return;
    }
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->isAssignmentOp()) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(binary->getLHS()->IgnoreParenImpCasts())) {
        state.freed.erase(ref->getDecl());
        state.pending.erase(ref->getDecl());
      }
      return;
    }
    if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(stmt)) {
      if (const ValueDecl* decl = pointer_base(subscript->getBase())) use_after_free(stmt, decl, state, report);
      return;
    }
    if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->getOpcode() == UO_Deref) {
      if (const ValueDecl* decl = pointer_base(unary->getSubExpr())) use_after_free(stmt, decl, state, report);
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    const std::string name = callee_name(call);
    if (is_cuda_free(name)) {
      const bool ordered = name == "cudaFreeAsync" || name == "cuMemFreeAsync";
      return on_free(call, call_arg(call, 0), name,
                     ordered ? std::optional(stream_key(call_arg(call, 1), facts_->context())) : std::nullopt, {},
                     state, report);
    }
    if (name == "free") {
      if (call->getNumArgs() == 1) on_host_free(call, call->getArg(0), state, report);
      return;
    }
    if (allocation_kind(name)) {
      if (const ValueDecl* decl = call->getNumArgs() > 0 ? pointer_base(call->getArg(0)) : nullptr) {
        state.freed.erase(decl);
        state.pending.erase(decl);
      }
      return;
    }
    if (name == "cudaEventRecord" || name == "cudaEventRecordWithFlags" || name == "cuEventRecord" ||
        name == "cuEventRecordWithFlags") {
      const std::string event = stream_key(call_arg(call, 0), facts_->context());
      const std::string stream = stream_key(call_arg(call, 1), facts_->context());
      auto& covered = state.events[event];
      covered.clear();
      const SyncCall on_stream = stream_sync(stream, facts_->context());
      for (const auto& [decl, streams] : state.pending)
        for (const auto& [key, work] : streams)
          if (sync_covers(on_stream, key, nonblocking_)) covered.emplace(decl, key);
      return;
    }
    if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") {
      // Work recorded in the event is now ordered before later work on the waiting stream.
      for (const auto& [decl, stream] : state.events[stream_key(call_arg(call, 1), facts_->context())])
        if (auto it = state.pending.find(decl); it != state.pending.end()) it->second.erase(stream);
      return;
    }
    if (auto copy = as_copy(call); copy && copy->async) {
      const std::string stream = stream_key(copy->stream, facts_->context());
      add_pending(copy->dst, stream, call, state, report);
      add_pending(copy->src, stream, call, state, report);
      return;
    }
    if (name == "cudaMemsetAsync") {
      add_pending(call_arg(call, 0), stream_key(call_arg(call, 3), facts_->context()), call, state, report);
      return;
    }
    const SyncCall sync = as_sync(
        call, facts_->context(), [this](const Expr* pointer) { return facts_->origin_of(pointer); },
        function_facts().sync_summaries().helper_sync(facts_->context()));
    // What the sync covers; settled too when the sync runs whenever the work ran.
    const auto settle = [&](const Stmt* work) {
      if (runs_whenever(call, work, facts_->function(), facts_->context())) state.settled.insert(work);
    };
    if (sync.kind == SyncKind::Device) {
      for (const auto& [decl, streams] : state.pending)
        for (const auto& [stream, work] : streams) settle(work);
      clear_all(state);
    }
    if (sync.kind == SyncKind::Legacy || sync.kind == SyncKind::Stream)
      for (auto& [decl, streams] : state.pending)
        std::erase_if(streams, [&](const auto& entry) {
          if (!sync_covers(sync, entry.first, nonblocking_)) return false;
          settle(entry.second);
          return true;
        });
    if (sync.kind == SyncKind::Event)
      for (const auto& [decl, stream] : state.events[sync.key])
        if (auto it = state.pending.find(decl); it != state.pending.end())
          if (auto work = it->second.find(stream); work != it->second.end()) {
            settle(work->second);
            it->second.erase(work);
          }
    // A helper of the translation unit that frees what it is given (after
    // its own waits, which the sync above applied: that order reports less).
    if (const FunctionSummary* helper =
            is_cuda_runtime_api(name) ? nullptr
                                      : function_facts().sync_summaries().of(call->getDirectCallee(), facts_->context()))
      for (const FreeEffect& free : helper->frees) on_helper_free(call, free, state, report);
    if (name == "cudaGraphLaunch" || name == "cuGraphLaunch") {
      // A graph's memory nodes allocate again at each launch, into the
      // pointers whose address was handed to the code that built the graph.
      for (const ValueDecl* decl : address_taken_) state.freed.erase(decl);
      return;
    }
    if (is_cuda_runtime_api(name)) {
      for (const Expr* arg : call->arguments())
        if (const ValueDecl* decl = pointer_base(arg); decl && decl->getType()->isPointerType() &&
                                                         !isa<UnaryOperator>(arg->IgnoreParenCasts()))
          use_after_free(call, decl, state, report);
    }
    // &p handed to other code (or to an API that writes a pointer, such as
    // cudaHostGetDevicePointer or cudaIpcOpenMemHandle) may assign p anew.
    for (const Expr* arg : call->arguments())
      if (const ValueDecl* decl = address_of_pointer(arg)) state.freed.erase(decl);
  }

  static const ValueDecl* address_of_pointer(const Expr* arg) {
    const auto* unary = dyn_cast<UnaryOperator>(arg->IgnoreParenCasts());
    if (unary == nullptr || unary->getOpcode() != UO_AddrOf) return nullptr;
    return pointer_base(unary->getSubExpr());
  }

  void collect_address_taken(const Stmt* body) {
    address_taken_.clear();
    for_each_stmt(body, [this](const Stmt* stmt) {
      if (const auto* call = dyn_cast<CallExpr>(stmt))
        for (const Expr* arg : call->arguments())
          if (const ValueDecl* decl = address_of_pointer(arg)) address_taken_.insert(decl);
    });
  }

  std::set<const ValueDecl*> address_taken_;
  const FunctionFacts* facts_ = nullptr;
  std::set<std::string> nonblocking_;
  std::set<const Stmt*> reported_;
};

GPUDIAG_REGISTER_CHECK(PrematureFree, "premature-free");

}  // namespace
}  // namespace gpudiag::lint
