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
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

#include "check.h"
#include "config.h"
#include "cuda_model.h"
#include "function_facts.h"
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
  void register_matchers(MatchFinder& finder) override {
    finder.addMatcher(callExpr(unless(isExpansionInSystemHeader())).bind("call"), this);
    finder.addMatcher(declRefExpr(unless(isExpansionInSystemHeader()), to(functionDecl())).bind("ref"), this);
    // Work handed to another thread, whose last error is its own.
    finder.addMatcher(
        cxxConstructExpr(unless(isExpansionInSystemHeader()),
                         hasDeclaration(cxxConstructorDecl(ofClass(hasAnyName("::std::thread", "::std::jthread")))))
            .bind("thread"),
        this);
    finder.addMatcher(
        callExpr(unless(isExpansionInSystemHeader()), callee(functionDecl(hasAnyName("::std::async", "::pthread_create"))))
            .bind("thread"),
        this);
  }

  void run(const MatchFinder::MatchResult& result) override {
    context_ = result.Context;
    if (const auto* spawn = result.Nodes.getNodeAs<Expr>("thread")) {
      note_thread_entries(spawn);
      return;
    }
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
    // A call in a template pattern is made by its instantiations, which are
    // matched too: the pattern's own call has no callers to be judged by.
    if (callee->getDeclName().isIdentifier()) {
      const FunctionDecl* outer = enclosing_function(call);
      if (outer == nullptr || !outer->isDependentContext())
        callers_[callee->getCanonicalDecl()].push_back({call, outer});
    }
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
    // Functions passed around as pointers (benchmark harnesses, dispatch
    // tables, callbacks): some of their calls are out of sight.
    for (const auto& [ref, function] : function_refs_)
      if (!callee_refs_.count(ref)) {
        address_taken_.insert(function);
        if (returned(ref)) returned_.insert(function);
      }
    checks_or_synchronisations_ = check_points_;
    checks_or_synchronisations_.insert(checks_or_synchronisations_.end(), synchronisations_.begin(),
                                       synchronisations_.end());
    tell_other_units();
    const LaunchHabit habit = launch_habit();
    for (const auto* launch : launches_) {
      const FunctionDecl* lambda_or_function = enclosing_function(launch);
      if (lambda_or_function == nullptr) continue;
      CrossUnitCondition checked = followed_by(launch, lambda_or_function, check_points_);
      if (checked.holds_outright()) {
        if (habit.holds()) report_late_check(launch, lambda_or_function, habit);
        continue;
      }
      const std::string kernel = kernel_name(launch);
      DeferredFinding finding;
      finding.finding = make(sm, launch->getBeginLoc(),
                             "the launch of kernel '" + kernel + "' is never checked; a bad launch configuration or a "
                             "fault inside it goes unnoticed. Call cudaGetLastError() after the launch (and check "
                             "the next synchronisation)");
      finding.alternatives.push_back({kLastErrorRead, std::move(checked), std::nullopt});
      finding.alternatives.push_back(
          {kSynchronised, followed_by(launch, lambda_or_function, checks_or_synchronisations_),
           "the launch of kernel '" + kernel + "' is checked only by a later synchronisation: that reports a fault "
           "inside the kernel, but a launch that never started (a bad configuration, no kernel image for this GPU) "
           "sets only the last error, which nothing reads. Call cudaGetLastError() after the launch"});
      report(std::move(finding), launch->getBeginLoc(), sm);
    }
  }

 private:
  // How the file checks its launches: most of them (at least two, more than
  // all the others together) read the last error in the statement right
  // after the launch. Then a launch whose read comes only after other work
  // breaks the file's own habit, as clang-tidy's bugprone-unused-return-value
  // judges a call by how the code checks it elsewhere. Counted once per
  // launch as written (template instantiations repeat it).
  struct LaunchHabit {
    size_t checked_right_after = 0;
    size_t launches = 0;
    bool holds() const { return checked_right_after >= 2 && 2 * checked_right_after > launches; }
  };

  LaunchHabit launch_habit() const {
    const SourceManager& sm = context_->getSourceManager();
    std::map<clang::SourceLocation, bool> right_after;  // by where the launch is written
    for (const auto* launch : launches_) {
      const clang::SourceLocation at = sm.getExpansionLoc(launch->getBeginLoc());
      right_after[at] = right_after[at] || checked_right_after(launch);
    }
    LaunchHabit habit;
    habit.launches = right_after.size();
    for (const auto& [at, checked] : right_after) habit.checked_right_after += checked;
    return habit;
  }

  // A launch the function reads the last error after, but only after other
  // work, in a file whose launches are checked right away.
  void report_late_check(const CUDAKernelCallExpr* launch, const FunctionDecl* lambda_or_function,
                         const LaunchHabit& habit) {
    if (checked_right_after(launch)) return;
    const CallExpr* check = first_check_after(launch, lambda_or_function);
    if (check == nullptr) check = first_check_after(launch, outside_lambdas(lambda_or_function));
    if (check == nullptr) return;  // checked by its callers: their habit is not this file's launches'
    const SourceManager& sm = context_->getSourceManager();
    const unsigned line = sm.getPresumedLineNumber(sm.getExpansionLoc(check->getBeginLoc()));
    report(make(sm, launch->getBeginLoc(),
                "the launch of kernel '" + kernel_name(launch) + "' is not checked where it is made: the last "
                "error is read only at line " + std::to_string(line) + ", after other work, while " +
                std::to_string(habit.checked_right_after) + " of the " + std::to_string(habit.launches) +
                " launches in this file read it right after the launch. A launch that fails here is noticed only "
                "there, once the work in between has run. Call cudaGetLastError() right after the launch"),
           launch->getBeginLoc(), sm);
  }

  // The statement that runs next after the launch's own reads the last
  // error (statements that call nothing aside), or the launch and a check
  // share one macro expansion (LAUNCH_AND_CHECK(...)). A launch last in its
  // block (a loop's or branch's body) is followed by what follows the block.
  bool checked_right_after(const CUDAKernelCallExpr* launch) const {
    const SourceManager& sm = context_->getSourceManager();
    if (launch->getBeginLoc().isMacroID())
      for (const CallExpr* check : check_points_)
        if (sm.getExpansionLoc(check->getBeginLoc()) == sm.getExpansionLoc(launch->getBeginLoc())) return true;
    return read_next(launch, {.through_blocks = true, .max_depth = 64}, [](const Stmt*) { return false; });
  }

  // Where read_next looks: up to `max_depth` parents above the site; past
  // the end of each enclosing block (never out of a lambda's body) or only
  // in the first.
  struct Following {
    bool through_blocks = false;
    int max_depth = 16;
  };

  // Do the statements after `site` read the last error before anything
  // clears it, or calls something other than what `passes` lets by?
  template <class Passes>
  bool read_next(const Stmt* site, Following where, Passes passes) const {
    DynTypedNode node = DynTypedNode::create(*site);
    for (int depth = 0; depth < where.max_depth; ++depth) {
      auto parents = context_->getParents(node);
      if (parents.empty() || parents[0].get<Stmt>() == nullptr) return false;
      if (where.through_blocks && isa<LambdaExpr>(parents[0].get<Stmt>())) return false;
      if (const auto* block = parents[0].get<CompoundStmt>()) {
        const Stmt* statement = node.get<Stmt>();
        bool after = false;
        for (const Stmt* sibling : block->body()) {
          if (after) {
            if (clears_last_error(sibling)) return false;
            if (reads_last_error(sibling)) return true;
            if (calls_anything(sibling) && !passes(sibling)) return false;
          }
          after = after || sibling == statement;
        }
        if (!where.through_blocks) return false;
      }
      node = parents[0];
    }
    return false;
  }

  // The first read of the last error after `site` in `function`'s body.
  const CallExpr* first_check_after(const Stmt* site, const FunctionDecl* function) const {
    if (function == nullptr || function->getBody() == nullptr) return nullptr;
    const SourceManager& sm = context_->getSourceManager();
    const clang::SourceLocation end = sm.getExpansionLoc(site->getEndLoc());
    const clang::SourceLocation body_end = sm.getExpansionLoc(function->getBody()->getEndLoc());
    const CallExpr* first = nullptr;
    for (const CallExpr* check : check_points_) {
      const clang::SourceLocation at = sm.getExpansionLoc(check->getBeginLoc());
      if (sm.isBeforeInTranslationUnit(at, end) || at == end || !sm.isBeforeInTranslationUnit(at, body_end)) continue;
      if (first == nullptr || sm.isBeforeInTranslationUnit(at, sm.getExpansionLoc(first->getBeginLoc())))
        first = check;
    }
    return first;
  }

  // The facts other units ask of calls in this one.
  static constexpr const char* kLastErrorRead = "the last error is read";
  static constexpr const char* kSynchronised = "the last error is read or a checked synchronisation waits";

  // What follows each call here of a function other units can see: a
  // launch helper defined there, or in a header they include, is checked
  // when every call of it is.
  void tell_other_units() {
    for (const auto& [callee, sites] : callers_) {
      if (!other_units_call(callee)) continue;
      const std::string name = function_facts().linkage_name(*callee, *context_);
      for (const auto& [call, outer] : sites) {
        // As in followed_by_callers: a call of itself is followed by what follows its other calls.
        if (outer != nullptr && outer->getCanonicalDecl() == callee) continue;
        // The caller is one call above the launch helper: depth 1.
        for (const auto& [fact, checks] : {std::pair{kLastErrorRead, &check_points_},
                                           std::pair{kSynchronised, &checks_or_synchronisations_}})
          cross_unit_facts().add_call(fact, name,
                                      outer ? followed_by(call, outer, *checks, 1) : CrossUnitCondition::none());
      }
    }
  }

  // When one of `checks` follows `site` where it runs: in its function, in
  // the function around its lambda, or after every call of the function it
  // is in, up the callers in this file, and in every file of the run for a
  // function other files can call (a virtual method one called here aside:
  // followed_by_callers says why). A launch helper only passed around as a function
  // pointer (to a benchmark harness, into a dispatch table) has its callers
  // out of sight, so it counts as followed; one also called directly is
  // judged by those calls, and one started as a thread is not excused (its
  // last error is the thread's own). Further up, a function only passed as a
  // pointer is where the calls begin, as main is: a GUI or thread callback,
  // whose caller reads no CUDA error.
  CrossUnitCondition followed_by(const Stmt* site, const FunctionDecl* lambda_or_function,
                                 const std::vector<const CallExpr*>& checks, int depth = 0) {
    if (checked_after(site, lambda_or_function, checks)) return CrossUnitCondition::always();
    // A lambda run on another thread reads its last error there or nowhere.
    if (const auto* method = dyn_cast<CXXMethodDecl>(lambda_or_function);
        method != nullptr && thread_lambdas_.count(method->getParent()))
      return CrossUnitCondition::none();
    // A launch in a lambda runs when the function around the lambda runs
    // it: that function is the launch helper its callers see.
    const FunctionDecl* function = outside_lambdas(lambda_or_function);
    if (function != lambda_or_function && checked_after(site, function, checks)) return CrossUnitCondition::always();
    return followed_by_callers(function->getCanonicalDecl(), checks, depth);
  }

  CrossUnitCondition followed_by_callers(const FunctionDecl* function, const std::vector<const CallExpr*>& checks,
                                         int depth) {
    constexpr int kMaxCallerDepth = 8;
    if (depth >= kMaxCallerDepth) return CrossUnitCondition::none();
    const auto key = std::tuple{function, &checks, depth};
    if (auto known = by_callers_.find(key); known != by_callers_.end())
      return known->second.value_or(CrossUnitCondition::none());  // none: a recursion
    by_callers_[key] = std::nullopt;
    CrossUnitCondition condition = CrossUnitCondition::always();
    bool called = false;
    const std::vector<const FunctionDecl*> names = called_as(function);
    for (const FunctionDecl* name : names) {
      auto callers = callers_.find(name);
      if (callers == callers_.end()) continue;
      for (const auto& [call, outer] : callers->second) {
        // A function calling itself is followed by what follows its other calls.
        if (outer != nullptr && outer->getCanonicalDecl() == function) continue;
        called = true;
        condition &= outer ? followed_by(call, outer, checks, depth + 1) : CrossUnitCondition::none();
        if (condition.never) break;
      }
      if (condition.never) break;
    }
    const bool seen_elsewhere = other_units_call(function);
    if (!called) {
      // A function a getter returns (`return launch_q8<...>;`, a dispatch
      // table by type) is called by the program through the pointer, out of
      // sight, at any depth; one only passed on is a callback's root.
      if ((depth == 0 || returned_.count(function)) && address_taken_.count(function) &&
          !thread_entries_.count(function))
        condition = CrossUnitCondition::always();
      else if (seen_elsewhere)
        condition = after_calls_in_every_unit(names);
      else
        condition = CrossUnitCondition::none();
    } else if (seen_elsewhere && !condition.never && !is_virtual(function)) {
      // Other files may call it too, unchecked; this file's calls are among
      // those every unit states (tell_other_units), so they agree. Not a
      // virtual method: it is called through the methods it overrides, which
      // its overrides call too (a container layer runs its children's
      // forward), so across files it would wait on itself; its calls here judge it.
      condition &= after_calls_in_every_unit(names);
    }
    by_callers_[key] = condition;
    return condition;
  }

  // Whether other units can call `function` and state what follows their
  // calls (tell_other_units): one with external linkage (or inline in a
  // header) that is neither main, a constructor or destructor, nor the system's.
  bool other_units_call(const FunctionDecl* function) const {
    return function->isExternallyVisible() && !function->isMain() &&
           !isa<CXXConstructorDecl, CXXDestructorDecl>(function) &&
           !context_->getSourceManager().isInSystemHeader(function->getLocation());
  }

  // After every call, in any unit, of the function `names` run: an override
  // is called through the methods it overrides, so the methods that override
  // nothing name those calls.
  CrossUnitCondition after_calls_in_every_unit(const std::vector<const FunctionDecl*>& names) {
    CrossUnitCondition condition = CrossUnitCondition::always();
    for (const FunctionDecl* name : names)
      if (!overrides_something(name))
        condition &= CrossUnitCondition::after_every_call_of(function_facts().linkage_name(*name, *context_));
    return condition;
  }

  // The lambdas and functions `spawn` (a std::thread, std::jthread,
  // std::async or pthread_create) runs on another thread.
  void note_thread_entries(const Expr* spawn) {
    std::vector<const Expr*> arguments;
    if (const auto* construct = dyn_cast<CXXConstructExpr>(spawn))
      arguments.assign(construct->arg_begin(), construct->arg_end());
    else if (const auto* call = dyn_cast<CallExpr>(spawn))
      arguments.assign(call->arg_begin(), call->arg_end());
    for (const Expr* argument : arguments) {
      const Expr* entry = argument->IgnoreUnlessSpelledInSource();
      if (const auto* address = dyn_cast<UnaryOperator>(entry); address && address->getOpcode() == UO_AddrOf)
        entry = address->getSubExpr()->IgnoreUnlessSpelledInSource();
      if (const auto* lambda = dyn_cast<LambdaExpr>(entry)) thread_lambdas_.insert(lambda->getLambdaClass());
      if (const auto* ref = dyn_cast<DeclRefExpr>(entry))
        if (const auto* function = dyn_cast<FunctionDecl>(ref->getDecl()))
          thread_entries_.insert(function->getCanonicalDecl());
    }
  }

  // The functions a call of which may run `function`: itself and, for a
  // virtual method, every method it overrides, which calls through a base
  // class name. Canonical declarations.
  static std::vector<const FunctionDecl*> called_as(const FunctionDecl* function) {
    std::vector<const FunctionDecl*> names{function};
    for (size_t i = 0; i < names.size() && names.size() < 64; ++i)
      if (const auto* method = dyn_cast<CXXMethodDecl>(names[i]))
        for (const CXXMethodDecl* overridden : method->overridden_methods())
          if (std::find(names.begin(), names.end(), overridden->getCanonicalDecl()) == names.end())
            names.push_back(overridden->getCanonicalDecl());
    return names;
  }

  static bool is_virtual(const FunctionDecl* function) {
    const auto* method = dyn_cast<CXXMethodDecl>(function);
    return method != nullptr && method->isVirtual();
  }

  static bool overrides_something(const FunctionDecl* function) {
    const auto* method = dyn_cast<CXXMethodDecl>(function);
    return method != nullptr && method->size_overridden_methods() > 0;
  }

  // `ref` is what a function returns: `return f;` or `return &f;`.
  bool returned(const DeclRefExpr* ref) const {
    DynTypedNode node = DynTypedNode::create(*ref);
    for (int depth = 0; depth < 4; ++depth) {
      auto parents = context_->getParents(node);
      if (parents.empty()) return false;
      const Stmt* parent = parents[0].get<Stmt>();
      if (parent == nullptr) return false;
      if (isa<ReturnStmt>(parent)) return true;
      const auto* address = dyn_cast<UnaryOperator>(parent);
      if (!isa<ImplicitCastExpr, ParenExpr>(parent) && !(address && address->getOpcode() == UO_AddrOf)) return false;
      node = parents[0];
    }
    return false;
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
    return read_next(call, {.through_blocks = false, .max_depth = 16},
                     [this](const Stmt* sibling) { return is_unchecked_runtime_call(sibling); });
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
    // A call in a default argument has a function around it with no body.
    if (function->getBody() == nullptr) return false;
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
  // Each call of a function, with the function (or lambda) it is in.
  struct CallSite {
    const CallExpr* call;
    const FunctionDecl* in;
  };
  std::map<const FunctionDecl*, std::vector<CallSite>> callers_;
  std::vector<std::pair<const DeclRefExpr*, const FunctionDecl*>> function_refs_;
  std::set<const DeclRefExpr*> callee_refs_;
  std::set<const FunctionDecl*> address_taken_;
  std::set<const FunctionDecl*> returned_;  // address taken by a return
  std::set<const CXXRecordDecl*> thread_lambdas_;  // closure classes
  std::set<const FunctionDecl*> thread_entries_;   // functions started as threads
  std::vector<const CallExpr*> checks_or_synchronisations_;
  // followed_by_callers' answers; none while one is being worked out.
  std::map<std::tuple<const FunctionDecl*, const std::vector<const CallExpr*>*, int>,
           std::optional<CrossUnitCondition>>
      by_callers_;
};

GPUDIAG_REGISTER_CHECK(UncheckedCudaError, "unchecked-cuda-error");

}  // namespace
}  // namespace gpudiag::lint
