// GD006 unchecked-cuda-error: the status of a CUDA/cuDNN/cuBLAS call is
// discarded (and no later statement of its block reads the last error), or
// a kernel launch is never followed by a read of the last error
// (cudaGetLastError / cudaPeekAtLastError, a function that calls one, or a
// configured ErrorCheckFunctions entry). A checked synchronisation is not
// one: it reports faults during execution, but a launch that never started
// (bad configuration, no kernel image for the GPU) leaves its error only in
// the last error (CUDA programming guide, "Error Checking").
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

#include "check.h"
#include "config.h"
#include "cuda_model.h"
#include "sync_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

// The value of `expr` is thrown away: it is a statement of its own.
bool discarded(const Expr* expr, ASTContext& context) {
  DynTypedNode node = DynTypedNode::create(*expr);
  for (int depth = 0; depth < 8; ++depth) {
    auto parents = context.getParents(node);
    if (parents.empty()) return false;
    const Stmt* parent = parents[0].get<Stmt>();
    if (parent == nullptr) return false;
    if (isa<ExprWithCleanups, ConstantExpr, ParenExpr>(parent) ||
        (isa<ImplicitCastExpr>(parent) && !isa<CallExpr>(parent))) {
      node = parents[0];
      continue;
    }
    if (isa<ExplicitCastExpr>(parent)) return false;  // (void)call: ignored on purpose
    if (isa<CompoundStmt, CaseStmt, DefaultStmt, LabelStmt>(parent)) return true;
    if (const auto* if_stmt = dyn_cast<IfStmt>(parent))
      return if_stmt->getThen() == node.get<Stmt>() || if_stmt->getElse() == node.get<Stmt>();
    if (const auto* loop = dyn_cast<ForStmt>(parent))
      return loop->getBody() == node.get<Stmt>() || loop->getInc() == node.get<Stmt>();
    if (const auto* loop = dyn_cast<WhileStmt>(parent)) return loop->getBody() == node.get<Stmt>();
    if (const auto* loop = dyn_cast<DoStmt>(parent)) return loop->getBody() == node.get<Stmt>();
    if (const auto* comma = dyn_cast<BinaryOperator>(parent); comma && comma->getOpcode() == BO_Comma)
      return comma->getLHS() == node.get<Stmt>();
    return false;
  }
  return false;
}

bool checks_last_error(const Stmt* stmt, int depth) {
  if (stmt == nullptr) return false;
  if (const auto* call = dyn_cast<CallExpr>(stmt)) {
    const std::string name = callee_name(call);
    if (name == "cudaGetLastError" || name == "cudaPeekAtLastError") return true;
    const FunctionDecl* callee = call->getDirectCallee();
    if (depth > 0 && callee && callee->hasBody() && !is_cuda_runtime_api(name) &&
        checks_last_error(callee->getBody(), depth - 1))
      return true;
  }
  for (const Stmt* child : stmt->children())
    if (checks_last_error(child, depth)) return true;
  return false;
}

class UncheckedCudaError : public Check {
 public:
  UncheckedCudaError() : Check("GD006", "unchecked-cuda-error") {}
  void register_matchers(MatchFinder& finder) override {
    finder.addMatcher(callExpr(unless(isExpansionInSystemHeader())).bind("call"), this);
    finder.addMatcher(declRefExpr(unless(isExpansionInSystemHeader()), to(functionDecl())).bind("ref"), this);
  }

  void run(const MatchFinder::MatchResult& result) override {
    context_ = result.Context;
    if (const auto* ref = result.Nodes.getNodeAs<DeclRefExpr>("ref")) {
      function_refs_.emplace_back(ref, ref->getDecl()->getAsFunction()->getCanonicalDecl());
      return;
    }
    const auto* call = result.Nodes.getNodeAs<CallExpr>("call");
    if (const auto* ref = dyn_cast<DeclRefExpr>(call->getCallee()->IgnoreParenImpCasts())) callee_refs_.insert(ref);
    if (const auto* launch = dyn_cast<CUDAKernelCallExpr>(call)) {
      // A launch inside a template (or generic lambda) pattern is judged in
      // its instantiations, where the kernel is known; the pattern would
      // report the same line again under the name 'kernel'.
      if (!launch->isTypeDependent() && !launch->isValueDependent() && !in_dependent_context(launch))
        launches_.push_back(launch);
      return;
    }
    const FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) return;
    const std::string name = callee_name(call);
    if (is_check_point(call, name)) check_points_.push_back(call);
    if (is_checked_synchronisation(call, name)) synchronisations_.push_back(call);
    if (callee->getDeclName().isIdentifier()) callers_[callee->getCanonicalDecl()].push_back(call);
    if (!is_status_type(call->getType()) || name == "cudaGetLastError" || name == "cudaPeekAtLastError") return;
    if (!discarded(call, *context_)) return;
    // Only the runtime API keeps a last error; cuBLAS, cuDNN and the driver do not.
    if (name.compare(0, 4, "cuda") == 0 && last_error_checked_later(call)) return;
    const SourceManager& sm = context_->getSourceManager();
    report(make(sm, call->getBeginLoc(),
                "the status returned by " + name + " is ignored; a failure here goes unnoticed and surfaces later "
                "as an unrelated error. Check it (e.g. wrap the call in your CUDA_CHECK macro) or cast it to "
                "void to ignore it on purpose"),
           call->getBeginLoc(), sm);
  }

  bool in_dependent_context(const Stmt* stmt) const {
    const FunctionDecl* function = enclosing_function(stmt);
    return function != nullptr && function->isDependentContext();
  }

  void onEndOfTranslationUnit() override {
    if (context_ == nullptr) return;
    const SourceManager& sm = context_->getSourceManager();
    // Launch helpers passed around as function pointers (benchmark harnesses,
    // dispatch tables): their callers cannot be seen, so they are not judged.
    std::set<const FunctionDecl*> address_taken;
    for (const auto& [ref, function] : function_refs_)
      if (!callee_refs_.count(ref)) address_taken.insert(function);
    std::vector<const CallExpr*> checks_or_synchronisations = check_points_;
    checks_or_synchronisations.insert(checks_or_synchronisations.end(), synchronisations_.begin(),
                                      synchronisations_.end());
    for (const auto* launch : launches_) {
      const FunctionDecl* lambda_or_function = enclosing_function(launch);
      if (lambda_or_function == nullptr) continue;
      if (followed_by(launch, lambda_or_function, check_points_, address_taken)) continue;
      const std::string kernel = kernel_name(launch);
      report(make(sm, launch->getBeginLoc(),
                  followed_by(launch, lambda_or_function, checks_or_synchronisations, address_taken)
                      ? "the launch of kernel '" + kernel + "' is checked only by a later synchronisation: that "
                        "reports a fault inside the kernel, but a launch that never started (a bad configuration, "
                        "no kernel image for this GPU) sets only the last error, which nothing reads. Call "
                        "cudaGetLastError() after the launch"
                      : "the launch of kernel '" + kernel + "' is never checked; a bad launch configuration or a "
                        "fault inside it goes unnoticed. Call cudaGetLastError() after the launch (and check the "
                        "next synchronisation)"),
             launch->getBeginLoc(), sm);
    }
  }

 private:
  // One of `checks` follows the launch where it runs: in its function, in
  // the function around its lambda, or after every call of its launch
  // helper in this file. A helper passed around as a function pointer has
  // callers out of sight, so it counts as followed.
  bool followed_by(const CUDAKernelCallExpr* launch, const FunctionDecl* lambda_or_function,
                   const std::vector<const CallExpr*>& checks, const std::set<const FunctionDecl*>& address_taken) const {
    if (checked_after(launch, lambda_or_function, checks)) return true;
    // A launch in a lambda runs when the function around the lambda runs
    // it: that function is the launch helper its callers see.
    const FunctionDecl* function = outside_lambdas(lambda_or_function);
    if ((function != lambda_or_function && checked_after(launch, function, checks)) ||
        address_taken.count(function->getCanonicalDecl()))
      return true;
    auto callers = callers_.find(function->getCanonicalDecl());
    return callers != callers_.end() && !callers->second.empty() &&
           std::all_of(callers->second.begin(), callers->second.end(), [&](const CallExpr* site) {
             const FunctionDecl* outer = enclosing_function(site);
             return outer != nullptr && checked_after(site, outer, checks);
           });
  }

  bool is_check_point(const CallExpr* call, const std::string& name) const {
    const auto& extra = config().error_check_functions;
    if (std::find(extra.begin(), extra.end(), name) != extra.end()) return true;
    // `cudaGetLastError();` on its own clears the error unread.
    if (name == "cudaGetLastError" || name == "cudaPeekAtLastError") return !discarded(call, *context_);
    const FunctionDecl* callee = call->getDirectCallee();
    return callee && callee->hasBody() && !is_cuda_runtime_api(name) && checks_last_error(callee->getBody(), 1);
  }

  // A CUDA call that makes the host wait (sync_model.h) and whose status is
  // used: it reports the faults of the kernels before it, though not their
  // launch errors.
  bool is_checked_synchronisation(const CallExpr* call, const std::string& name) const {
    return is_cuda_runtime_api(name) && as_sync(call, *context_).kind != SyncKind::None && !discarded(call, *context_);
  }

  // The statement right after reads the thread's last error
  // (cudaGetLastError, a CHECK_LAST_ERROR()-style macro or function, a
  // configured ErrorCheckFunctions call), with only other unchecked runtime
  // calls or statements that call nothing in between: a failed runtime call leaves its status there until it
  // is read, so the failure is noticed where it happened. A check further
  // on, after other work, is the "unrelated error later" the rule is about.
  bool last_error_checked_later(const Expr* call) const {
    DynTypedNode node = DynTypedNode::create(*call);
    for (int depth = 0; depth < 16; ++depth) {
      auto parents = context_->getParents(node);
      if (parents.empty()) return false;
      if (const auto* block = parents[0].get<CompoundStmt>()) {
        const Stmt* statement = node.get<Stmt>();
        bool after = false;
        for (const Stmt* sibling : block->body()) {
          if (after) {
            if (clears_last_error(sibling)) return false;
            if (reads_last_error(sibling)) return true;
            if (!is_unchecked_runtime_call(sibling) && calls_anything(sibling)) return false;
          }
          after = after || sibling == statement;
        }
        return false;
      }
      if (parents[0].get<Stmt>() == nullptr) return false;
      node = parents[0];
    }
    return false;
  }

  static bool calls_anything(const Stmt* stmt) {
    bool found = false;
    for_each_stmt(stmt, [&](const Stmt* inner) { found = found || isa<CallExpr, CXXConstructExpr>(inner); });
    return found;
  }

  bool is_unchecked_runtime_call(const Stmt* stmt) const {
    const auto* call = dyn_cast<CallExpr>(stmt->IgnoreContainers());
    return call != nullptr && callee_name(call).compare(0, 4, "cuda") == 0 && discarded(call, *context_);
  }

  // `cudaGetLastError();` on its own: the error is cleared unread.
  bool clears_last_error(const Stmt* stmt) const {
    const auto* call = dyn_cast<CallExpr>(stmt->IgnoreContainers());
    return call != nullptr && callee_name(call) == "cudaGetLastError" && discarded(call, *context_);
  }

  // A cudaGetLastError() whose value is thrown away clears the error
  // unread: no check.
  bool reads_last_error(const Stmt* stmt) const {
    const auto& extra = config().error_check_functions;
    bool found = false;
    for_each_stmt(stmt, [&](const Stmt* inner) {
      const auto* call = dyn_cast<CallExpr>(inner);
      if (found || call == nullptr) return;
      const std::string name = callee_name(call);
      const FunctionDecl* callee = call->getDirectCallee();
      found = std::find(extra.begin(), extra.end(), name) != extra.end() ||
              ((name == "cudaGetLastError" || name == "cudaPeekAtLastError") && !discarded(call, *context_)) ||
              (callee && callee->hasBody() && !is_cuda_runtime_api(name) && checks_last_error(callee->getBody(), 0));
    });
    return found;
  }

  const FunctionDecl* enclosing_function(const Stmt* stmt) const {
    DynTypedNode node = DynTypedNode::create(*stmt);
    for (int depth = 0; depth < 256; ++depth) {
      auto parents = context_->getParents(node);
      if (parents.empty()) return nullptr;
      node = parents[0];
      if (const auto* function = node.get<FunctionDecl>()) return function;
      if (node.get<LambdaExpr>()) return nullptr;
    }
    return nullptr;
  }

  // The function a lambda's call operator (an instantiated generic lambda
  // included) is written in; `function` itself when it is no lambda.
  static const FunctionDecl* outside_lambdas(const FunctionDecl* function) {
    for (int depth = 0; depth < 16; ++depth) {
      const auto* method = dyn_cast<CXXMethodDecl>(function);
      if (method == nullptr || !method->getParent()->isLambda()) return function;
      const auto* outer = dyn_cast_or_null<FunctionDecl>(method->getParent()->getDeclContext());
      if (outer == nullptr || !outer->hasBody()) return function;
      function = outer;
    }
    return function;
  }

  // One of `checks` follows `site` in `function`, or is in the same macro
  // expansion as it.
  bool checked_after(const Stmt* site, const FunctionDecl* function, const std::vector<const CallExpr*>& checks) const {
    const SourceManager& sm = context_->getSourceManager();
    const SourceRange body = function->getBody()->getSourceRange();
    const clang::SourceLocation end = sm.getExpansionLoc(site->getEndLoc());
    return std::any_of(checks.begin(), checks.end(), [&](const CallExpr* check) {
      const clang::SourceLocation at = sm.getExpansionLoc(check->getBeginLoc());
      return !sm.isBeforeInTranslationUnit(at, end) && at != end &&
             sm.isBeforeInTranslationUnit(at, sm.getExpansionLoc(body.getEnd()));
    }) || std::any_of(checks.begin(), checks.end(), [&](const CallExpr* check) {
      // A check in the same macro expansion as the launch (LAUNCH_AND_CHECK(...)).
      return sm.getExpansionLoc(check->getBeginLoc()) == sm.getExpansionLoc(site->getBeginLoc()) &&
             site->getBeginLoc().isMacroID();
    });
  }

  ASTContext* context_ = nullptr;
  std::vector<const CUDAKernelCallExpr*> launches_;
  std::vector<const CallExpr*> check_points_;
  std::vector<const CallExpr*> synchronisations_;
  std::map<const FunctionDecl*, std::vector<const CallExpr*>> callers_;
  std::vector<std::pair<const DeclRefExpr*, const FunctionDecl*>> function_refs_;
  std::set<const DeclRefExpr*> callee_refs_;
};

GPUDIAG_REGISTER_CHECK(UncheckedCudaError, "GD006", "unchecked-cuda-error");

}  // namespace
}  // namespace gpudiag::lint
