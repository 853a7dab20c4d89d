#include "sync_summaries.h"

#include <clang/AST/Decl.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

namespace gpudiag::lint {
using namespace clang;

namespace {

// Member operators take the object as argument 0 of the call expression.
unsigned first_parameter_argument(const CallExpr* call) {
  if (const auto* op = dyn_cast<CXXOperatorCallExpr>(call))
    if (isa_and_nonnull<CXXMethodDecl>(op->getDirectCallee())) return 1;
  return 0;
}

bool same(const SyncEffect& a, const SyncEffect& b) {
  return a.kind == b.kind && a.handle.param == b.handle.param && a.handle.key == b.handle.key;
}

class Summariser {
 public:
  Summariser(const FunctionDecl& function, ASTContext& context, SyncSummaries& summaries)
      : function_(function), context_(context), summaries_(summaries), helper_sync_(summaries.helper_sync(context)) {}

  FunctionSummary run() {
    walk(function_.getBody(), false);
    FunctionSummary summary;
    summary.params = parameter_fates();
    summary.frees = std::move(frees_);
    if (unknown_wait_) {
      summary.sync = SyncEffect{SyncKind::Device, {}};
    } else if (!waits_.empty()) {
      summary.sync = waits_.front();
      for (const SyncEffect& wait : waits_)
        if (wait.kind == SyncKind::Device || !same(wait, waits_.front())) summary.sync = SyncEffect{SyncKind::Device, {}};
    }
    return summary;
  }

 private:
  // The index of the parameter `expr` names, or -1.
  int parameter(const Expr* expr) const {
    if (expr == nullptr) return -1;
    const auto* ref = dyn_cast<DeclRefExpr>(expr->IgnoreParenImpCasts());
    const auto* param = ref ? dyn_cast<ParmVarDecl>(ref->getDecl()) : nullptr;
    if (param == nullptr || param->getDeclContext() != &function_) return -1;
    return static_cast<int>(param->getFunctionScopeIndex());
  }
  int freed_parameter(const Expr* pointer) const {
    const auto* param = dyn_cast_or_null<ParmVarDecl>(pointer_base(pointer));
    if (param == nullptr || param->getDeclContext() != &function_ || !param->getType()->isPointerType()) return -1;
    return static_cast<int>(param->getFunctionScopeIndex());
  }
  // A handle the caller can name: a parameter, a global, a special stream.
  // `expr` is null when the key came from a callee's own handle.
  std::optional<HandleRef> handle(const Expr* expr, const std::string& key) const {
    if (expr == nullptr) return HandleRef{-1, key};
    if (int param = parameter(expr); param >= 0) return HandleRef{param, {}};
    if (!key.empty() && key.front() == '<') return HandleRef{-1, key};
    const auto* ref = dyn_cast<DeclRefExpr>(expr->IgnoreParenImpCasts());
    const auto* var = ref ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
    if (var != nullptr && var->hasGlobalStorage() && !var->isStaticLocal()) return HandleRef{-1, key};
    return std::nullopt;
  }

  // `if (p)` / `if (p != nullptr)`: freeing nothing when p is null is still
  // freeing p on every path that matters.
  static bool null_check(const Expr* condition) {
    if (condition == nullptr) return false;
    condition = condition->IgnoreParenImpCasts();
    if (const auto* ref = dyn_cast<DeclRefExpr>(condition)) return ref->getType()->isPointerType();
    if (const auto* binary = dyn_cast<BinaryOperator>(condition); binary && binary->getOpcode() == BO_NE)
      return binary->getLHS()->IgnoreParenImpCasts()->getType()->isPointerType();
    return false;
  }
  static bool runs_once(const DoStmt* loop, ASTContext& context) {
    bool repeats = true;
    return loop->getCond()->EvaluateAsBooleanCondition(repeats, context) && !repeats;
  }

  // Frees only count when they happen whenever the function runs: a helper
  // that frees under a flag of its own would otherwise look like a use after
  // free in every caller that passes the flag off.
  void walk(const Stmt* stmt, bool conditional) {
    if (stmt == nullptr || isa<LambdaExpr, UnaryExprOrTypeTraitExpr>(stmt)) return;
    visit(stmt, conditional);
    if (const auto* branch = dyn_cast<IfStmt>(stmt)) {
      walk(branch->getInit(), conditional);
      walk(branch->getCond(), conditional);
      walk(branch->getThen(), conditional || !null_check(branch->getCond()));
      walk(branch->getElse(), true);
      return;
    }
    if (const auto* loop = dyn_cast<DoStmt>(stmt); loop && runs_once(loop, context_)) {
      walk(loop->getBody(), conditional);
      return;
    }
    const auto* binary = dyn_cast<BinaryOperator>(stmt);
    const bool branches = isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt, SwitchStmt, AbstractConditionalOperator,
                              CXXTryStmt>(stmt) ||
                          (binary != nullptr && binary->isLogicalOp());
    for (const Stmt* child : stmt->children()) walk(child, conditional || branches);
  }

  // Uses for a pointer parameter every mention of which only uses its
  // memory, Frees for one freed on every path (whatever else is done to it),
  // Keeps otherwise.
  std::vector<ParamFate> parameter_fates() const {
    std::vector<ParamFate> fates(function_.getNumParams(), ParamFate::Keeps);
    for (unsigned i = 0; i < fates.size(); ++i)
      if (function_.getParamDecl(i)->getType()->isPointerType()) fates[i] = ParamFate::Uses;
    std::vector<const Stmt*> parents;
    scan_mentions(function_.getBody(), parents, false, fates);
    for (const FreeEffect& free : frees_)
      if (free.param < fates.size()) fates[free.param] = ParamFate::Frees;
    return fates;
  }

  void scan_mentions(const Stmt* stmt, std::vector<const Stmt*>& parents, bool in_lambda,
                     std::vector<ParamFate>& fates) const {
    if (stmt == nullptr) return;
    if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      const auto* param = dyn_cast<ParmVarDecl>(ref->getDecl());
      if (param != nullptr && param->getDeclContext() == &function_ && (in_lambda || !only_uses(ref, parents)))
        fates[param->getFunctionScopeIndex()] = ParamFate::Keeps;
    }
    in_lambda = in_lambda || isa<LambdaExpr>(stmt);  // a lambda may outlive the call
    parents.push_back(stmt);
    for (const Stmt* child : stmt->children()) scan_mentions(child, parents, in_lambda, fates);
    parents.pop_back();
  }

  // Does this mention of a pointer parameter only read or write through it?
  // `parents` leads from the body down to `ref`.
  bool only_uses(const DeclRefExpr* ref, const std::vector<const Stmt*>& parents) const {
    const Stmt* child = ref;
    for (size_t i = parents.size(); i-- > 0;) {
      const Stmt* up = parents[i];
      const auto* unary = dyn_cast<UnaryOperator>(up);
      const auto* binary = dyn_cast<BinaryOperator>(up);
      if (isa<ImplicitCastExpr, ParenExpr, ExplicitCastExpr>(up) || (binary && binary->isAdditiveOp())) {
        child = up;  // still a pointer into the same memory
        continue;
      }
      if (isa<ArraySubscriptExpr, MemberExpr>(up)) {
        // &p[i] / &p->x point into the memory again; p[i] / p->x are its contents.
        const auto* address = i > 0 ? dyn_cast<UnaryOperator>(parents[i - 1]) : nullptr;
        if (address == nullptr || address->getOpcode() != UO_AddrOf) return true;
        child = parents[--i];
        continue;
      }
      if (unary) return unary->getOpcode() != UO_AddrOf;  // &p hands on the variable itself
      if (const auto* call = dyn_cast<CallExpr>(up)) return call_only_uses(call, child);
      if (binary)
        return binary->isComparisonOp() || binary->isLogicalOp() ||
               (binary->isAssignmentOp() && binary->getLHS() == child);
      if (const auto* conditional = dyn_cast<AbstractConditionalOperator>(up)) return conditional->getCond() == child;
      return isa<IfStmt, WhileStmt, ForStmt, DoStmt, SwitchStmt, UnaryExprOrTypeTraitExpr>(up);
    }
    return true;
  }

  // `argument`, one of the call's arguments, is a pointer into the memory.
  bool call_only_uses(const CallExpr* call, const Stmt* argument) const {
    if (isa<CUDAKernelCallExpr>(call)) return true;
    const std::string name = callee_name(call);
    if (is_cuda_free(name) || name == "free") return false;  // a free on every path makes it Frees
    if (is_cuda_runtime_api(name) || name == "memcpy" || name == "memset" || name == "__cudaPushCallConfiguration")
      return true;
    if (call->getCallee() == argument) return false;
    return summaries_.argument_fate(call, dyn_cast<Expr>(argument), context_) == ParamFate::Uses;
  }

  void visit(const Stmt* stmt, bool conditional) {
    if (const auto* del = dyn_cast<CXXDeleteExpr>(stmt)) {
      if (int param = freed_parameter(del->getArgument()); param >= 0 && !conditional)
        frees_.push_back({unsigned(param), "delete", {}});
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr || isa<CUDAKernelCallExpr>(call)) return;
    const std::string name = callee_name(call);
    if (conditional) {
      // frees do not count; waits do (a missed finding is better than a false one)
    } else if (is_cuda_free(name) || name == "free") {
      if (int param = freed_parameter(call_arg(call, 0)); param >= 0) {
        FreeEffect effect{unsigned(param), name, {}};
        if (name == "cudaFreeAsync" || name == "cuMemFreeAsync")
          effect.stream = handle(call_arg(call, 1), stream_key(call_arg(call, 1), context_));
        frees_.push_back(std::move(effect));
      }
    } else if (!is_cuda_runtime_api(name)) {
      if (const FunctionSummary* callee = summaries_.of(call->getDirectCallee(), context_))
        for (const FreeEffect& inner : callee->frees) {
          const int param = freed_parameter(argument_for(call, HandleRef{int(inner.param), {}}));
          if (param < 0) continue;
          FreeEffect effect{unsigned(param), inner.how, {}};
          if (inner.stream)
            effect.stream = handle(argument_for(call, *inner.stream), key_for(call, *inner.stream, context_));
          frees_.push_back(std::move(effect));
        }
    }
    const SyncCall sync = as_sync(call, context_, {}, helper_sync_);
    switch (sync.kind) {
      case SyncKind::None: return;
      case SyncKind::Device:
      case SyncKind::Legacy: waits_.push_back({sync.kind, {}}); return;
      case SyncKind::Stream:
      case SyncKind::Event:
        if (auto ref = handle(sync.handle, sync.key)) waits_.push_back({sync.kind, *ref});
        else unknown_wait_ = true;
        return;
    }
  }

  const FunctionDecl& function_;
  ASTContext& context_;
  SyncSummaries& summaries_;
  const HelperSyncLookup helper_sync_;
  std::vector<SyncEffect> waits_;
  bool unknown_wait_ = false;
  std::vector<FreeEffect> frees_;
};

}  // namespace

const FunctionSummary* SyncSummaries::of(const FunctionDecl* function, ASTContext& context) {
  const FunctionDecl* definition = nullptr;
  if (function == nullptr || !function->hasBody(definition) || definition == nullptr ||
      definition->getBody() == nullptr || definition->isDependentContext())
    return nullptr;
  if (definition->getDeclName().isIdentifier() && is_cuda_runtime_api(definition->getName())) return nullptr;
  const SourceManager& sm = context.getSourceManager();
  if (sm.isInSystemHeader(sm.getExpansionLoc(definition->getLocation())) || is_device_only(definition)) return nullptr;
  if (auto it = done_.find(definition); it != done_.end()) return &it->second;
  if (!in_progress_.insert(definition).second) return nullptr;  // recursion: nothing known yet
  FunctionSummary summary = Summariser(*definition, context, *this).run();
  in_progress_.erase(definition);
  return &(done_[definition] = std::move(summary));
}

namespace {
class NonblockingStreams : public RecursiveASTVisitor<NonblockingStreams> {
 public:
  explicit NonblockingStreams(std::set<std::string>& keys) : keys_(keys) {}
  bool VisitFunctionDecl(FunctionDecl* function) {
    if (!function->doesThisDeclarationHaveABody() || function->isDependentContext()) return true;
    for (const ValueDecl* stream : nonblocking_stream_variables(function->getBody())) {
      const auto* var = dyn_cast<VarDecl>(stream);
      if (isa<FieldDecl>(stream) || (var != nullptr && var->hasGlobalStorage() && !var->isStaticLocal()))
        keys_.insert(stream_key(stream));
    }
    return true;
  }

 private:
  std::set<std::string>& keys_;
};
}  // namespace

const std::set<std::string>& SyncSummaries::shared_nonblocking_streams(ASTContext& context) {
  if (!shared_nonblocking_) {
    shared_nonblocking_.emplace();
    // The traversal scope is the user's declarations: headers are not walked.
    NonblockingStreams(*shared_nonblocking_).TraverseAST(context);
  }
  return *shared_nonblocking_;
}

const Expr* argument_for(const CallExpr* call, const HandleRef& handle) {
  if (call == nullptr || handle.param < 0) return nullptr;
  return call_arg(call, first_parameter_argument(call) + unsigned(handle.param));
}

std::string key_for(const CallExpr* call, const HandleRef& handle, const ASTContext& context) {
  if (handle.param < 0) return handle.key;
  return stream_key(argument_for(call, handle), context);
}

std::optional<unsigned> parameter_of(const CallExpr* call, const Expr* argument) {
  const FunctionDecl* callee = call != nullptr ? call->getDirectCallee() : nullptr;
  if (callee == nullptr) return std::nullopt;
  const unsigned first = first_parameter_argument(call);
  for (unsigned i = first; i < call->getNumArgs(); ++i)
    if (call->getArg(i) == argument)
      return i - first < callee->getNumParams() ? std::optional<unsigned>(i - first) : std::nullopt;
  return std::nullopt;
}

ParamFate SyncSummaries::argument_fate(const CallExpr* call, const Expr* argument, ASTContext& context) {
  const FunctionSummary* summary = call != nullptr ? of(call->getDirectCallee(), context) : nullptr;
  if (summary == nullptr) return ParamFate::Keeps;
  const std::optional<unsigned> param = parameter_of(call, argument);
  return param && *param < summary->params.size() ? summary->params[*param] : ParamFate::Keeps;
}

SyncCall SyncSummaries::sync_of(const CallExpr* call, ASTContext& context) {
  const FunctionSummary* summary = of(call->getDirectCallee(), context);
  if (summary == nullptr || !summary->sync) return {};
  const SyncEffect& effect = *summary->sync;
  if (effect.kind == SyncKind::Device || effect.kind == SyncKind::Legacy) return {effect.kind, {}};
  const std::string key = key_for(call, effect.handle, context);
  const Expr* argument = argument_for(call, effect.handle);
  if (effect.kind == SyncKind::Event) return {SyncKind::Event, key, argument};
  SyncCall sync = stream_sync(key, context);
  sync.handle = argument;
  return sync;
}

}  // namespace gpudiag::lint
