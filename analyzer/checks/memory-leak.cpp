// GD007 memory-leak: a CUDA allocation held by a local pointer that some
// path leaves the function without freeing. The pointer is no longer
// tracked once it escapes (returned, stored elsewhere, handed to non-CUDA
// code, captured by a lambda). A return guarded by an error test (the
// allocation failed, a status check) is an error path and is not reported.
#include <functional>
#include <map>
#include <set>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

#include "cuda_model.h"
#include "flow.h"
#include "function_facts.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

// A leak is only claimed where the pointer is live on EVERY path to the exit:
// frees under conditions that correlate (if (a) free; ... if (!a) free;) are
// common, and a path-insensitive "some path" would cry wolf on them.
struct Live {
  const CallExpr* alloc;
  bool on_every_path;
};
struct State {
  std::map<const VarDecl*, Live> live;  // pointer -> its allocation
  bool join(const State& other) {
    bool changed = false;
    for (auto& [var, entry] : live) {
      auto it = other.live.find(var);
      if (entry.on_every_path && (it == other.live.end() || !it->second.on_every_path)) {
        entry.on_every_path = false;
        changed = true;
      }
    }
    for (const auto& [var, entry] : other.live)
      if (live.emplace(var, Live{entry.alloc, false}).second) changed = true;
    return changed;
  }
};

class MemoryLeak : public FunctionCheck {
 public:
  MemoryLeak() : FunctionCheck("GD007", "memory-leak") {}

 protected:
  void check(const FunctionFacts& facts) override {
    const FunctionDecl* function = &facts.function();
    if (!facts.uses_cuda()) return;  // every allocation it tracks is a CUDA call
    context_ = &facts.context();
    function_ = function;
    bool allocates = false;
    captured_.clear();
    for_each_stmt(function->getBody(), [&](const Stmt* stmt) {
      if (const auto* call = dyn_cast<CallExpr>(stmt); call && allocation_kind(callee_name(call))) allocates = true;
    });
    if (!allocates) return;
    // Anything a lambda mentions may be freed there.
    std::function<void(const Stmt*)> collect = [&](const Stmt* stmt) {
      if (stmt == nullptr) return;
      if (const auto* lambda = dyn_cast<LambdaExpr>(stmt)) {
        std::function<void(const Stmt*)> refs = [&](const Stmt* inner) {
          if (const auto* ref = dyn_cast_or_null<DeclRefExpr>(inner)) captured_.insert(ref->getDecl());
          if (inner) for (const Stmt* child : inner->children()) refs(child);
        };
        refs(lambda->getBody());
        return;
      }
      for (const Stmt* child : stmt->children()) collect(child);
    };
    collect(function->getBody());
    if (facts.cfg() == nullptr) return;
    auto exit = run_forward(*facts.cfg(), State{}, [this](const Stmt* stmt, State& state, bool report) {
      step(stmt, state, report);
    });
    if (!exit) return;
    for (const auto& [var, entry] : exit->live)
      if (entry.on_every_path)
        leak(entry.alloc, var, function->getBody()->getEndLoc(), "the end of '" + function->getNameAsString() + "'");
  }

 private:
  const SourceManager& sm() const { return context_->getSourceManager(); }

  void leak(const CallExpr* alloc, const VarDecl* var, clang::SourceLocation exit_at, const std::string& exit_what) {
    if (!reported_.insert(alloc).second) return;  // one finding per allocation
    Finding finding = make(sm(), alloc->getBeginLoc(),
                           "'" + var->getNameAsString() + "' allocated by " + callee_name(alloc) +
                               " is not freed on the path that reaches " + exit_what +
                               "; each call leaks it until the GPU runs out of memory. Free it on every path "
                               "(or hold it in an RAII owner)");
    note(finding, sm(), exit_at, "the function is left here without freeing it");
    report(std::move(finding), alloc->getBeginLoc(), sm());
  }

  const Stmt* parent(const Stmt* stmt) const {
    auto parents = context_->getParents(*stmt);
    return parents.empty() ? nullptr : parents[0].get<Stmt>();
  }

  // The use of `ref` keeps ownership here (CUDA call, launch, index, compare)?
  bool harmless_use(const DeclRefExpr* ref) const {
    const Stmt* child = ref;
    const Stmt* up = parent(ref);
    while (up && (isa<ImplicitCastExpr, ParenExpr, ExplicitCastExpr>(up) ||
                  (isa<UnaryOperator>(up) && cast<UnaryOperator>(up)->getOpcode() == UO_AddrOf) ||
                  (isa<BinaryOperator>(up) && cast<BinaryOperator>(up)->isAdditiveOp()))) {
      child = up;
      up = parent(up);
    }
    if (up == nullptr) return true;
    if (const auto* call = dyn_cast<CallExpr>(up)) {
      if (isa<CUDAKernelCallExpr>(call)) return true;
      const std::string name = callee_name(call);
      return is_cuda_runtime_api(name) || name == "__cudaPushCallConfiguration" || name == "memcpy" ||
             name == "memset" || name.rfind("curand", 0) == 0;
    }
    if (isa<ArraySubscriptExpr, MemberExpr>(up)) return true;
    if (const auto* unary = dyn_cast<UnaryOperator>(up)) return unary->getOpcode() != UO_AddrOf;
    if (const auto* binary = dyn_cast<BinaryOperator>(up))
      return binary->isComparisonOp() || binary->isLogicalOp() || (binary->isAssignmentOp() && binary->getLHS() == child);
    return isa<IfStmt, WhileStmt, ForStmt, ConditionalOperator>(up);
  }

  // Is this return on an error path: under an if whose condition tests a
  // CUDA status, the allocation's result, or a pointer against null?
  bool error_path(const ReturnStmt* ret) const {
    const Stmt* child = ret;
    for (const Stmt* up = parent(ret); up != nullptr; child = up, up = parent(up)) {
      const auto* branch = dyn_cast<IfStmt>(up);
      if (branch == nullptr || branch->getCond() == child) continue;
      bool status = false;
      for_each_stmt(branch->getCond(), [&](const Stmt* stmt) {
        if (const auto* expr = dyn_cast<Expr>(stmt); expr && is_status_type(expr->getType())) status = true;
        if (const auto* ref = dyn_cast<DeclRefExpr>(stmt); ref && ref->getType()->isPointerType()) status = true;
      });
      if (status) return true;
    }
    return false;
  }

  void step(const Stmt* stmt, State& state, bool report) {
    if (const auto* ret = dyn_cast<ReturnStmt>(stmt)) {
      // An error path's leaks are not claimed; other returns keep their state so
      // that the exit sees every way out of the function.
      if (error_path(ret)) {
        state.live.clear();
      } else if (report) {
        for (const auto& [var, entry] : state.live)
          if (entry.on_every_path) leak(entry.alloc, var, ret->getBeginLoc(), "this return");
      }
      return;
    }
    if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      const auto* var = dyn_cast<VarDecl>(ref->getDecl());
      if (var && state.live.count(var) && !harmless_use(ref)) state.live.erase(var);  // escapes
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    const std::string name = callee_name(call);
    if (name == "cudaDeviceReset") {
      state.live.clear();
      return;
    }
    const auto* var = call->getNumArgs() > 0 ? dyn_cast_or_null<VarDecl>(pointer_base(call->getArg(0))) : nullptr;
    if (var == nullptr) return;
    if (is_cuda_free(name)) {
      state.live.erase(var);
    } else if (allocation_kind(name) && var->getDeclContext() == function_ && var->isLocalVarDecl() &&
               !var->isStaticLocal() && var->getType()->isPointerType() && !captured_.count(var)) {
      state.live[var] = Live{call, true};
    }
  }

  ASTContext* context_ = nullptr;
  const FunctionDecl* function_ = nullptr;
  std::set<const ValueDecl*> captured_;
  std::set<const CallExpr*> reported_;
};

GPUDIAG_REGISTER_CHECK(MemoryLeak, "GD007", "memory-leak");

}  // namespace
}  // namespace gpudiag::lint
