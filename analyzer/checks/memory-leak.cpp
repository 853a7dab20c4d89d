// GD007 memory-leak, in two parts.
// Per path: a CUDA allocation held by a local pointer that SUCCEEDED on some
// path (the allocation's own status or null test is followed, so its failure
// branch holds nothing) and reaches a return, a `goto` past the frees or the
// end of the function unfreed. The pointer is no longer tracked once it
// escapes (returned, stored elsewhere, handed to non-CUDA code such as an
// RAII owner, captured by a lambda), except to a helper whose summary says it
// only uses that parameter: a helper of the file, or one defined in another
// file of the run, whose unit says so (cross_unit.h). A function defined in
// no file keeps what it is handed. A path that branches around a free it
// cannot relate to the allocation (`if (x) cudaFree(p)`, often paired with
// `if (x) cudaMalloc(&p)`) is given up, not reported.
// Per record: a pointer field allocated with a CUDA allocator in a record
// whose destroy function (or destructor) frees other fields but never this
// one, and which no code anywhere frees or takes over.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/Lex/Lexer.h>

#include "check.h"
#include "cross_unit.h"
#include "cuda_model.h"
#include "function_facts.h"
#include "ownership.h"
#include "path_states.h"
#include "sync_summaries.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

struct LeakPath {
  std::map<const VarDecl*, const CallExpr*> live;      // pointer -> the call that allocated it
  std::map<const VarDecl*, const VarDecl*> status_of;  // status variable -> pointer it reports on
  const ReturnStmt* left_at = nullptr;                 // the return taken, if any
  bool operator==(const LeakPath&) const = default;
  // Keeps only what both paths agree on: fewer live pointers, fewer claims.
  void absorb(const LeakPath& other) {
    std::erase_if(live, [&](const auto& entry) {
      auto it = other.live.find(entry.first);
      return it == other.live.end() || it->second != entry.second;
    });
    std::erase_if(status_of, [&](const auto& entry) {
      auto it = other.status_of.find(entry.first);
      return it == other.status_of.end() || it->second != entry.second;
    });
  }
};

// A branch on whether `pointer`'s allocation succeeded.
struct SuccessTest {
  const VarDecl* pointer;
  bool fails_when_true;
};

// Paths kept apart per block; beyond this they are folded conservatively.
constexpr size_t kMaxPaths = 16;

const Expr* strip(const Expr* expr) { return expr ? expr->IgnoreParenCasts() : nullptr; }

// 0, NULL, nullptr, false, cudaSuccess, CUDA_SUCCESS.
bool is_zero_constant(const Expr* expr, ASTContext& context) {
  expr = strip(expr);
  if (expr == nullptr || expr->isValueDependent()) return false;
  if (expr->isNullPointerConstant(context, Expr::NPC_ValueDependentIsNotNull)) return true;
  if (const auto* ref = dyn_cast<DeclRefExpr>(expr))
    if (const auto* constant = dyn_cast<EnumConstantDecl>(ref->getDecl())) return constant->getInitVal() == 0;
  return false;
}

// Does the statement never fall through: does it end in a return, goto,
// break, continue, throw or noreturn call? Skipping such a branch is the
// normal path, not a free avoided under a condition.
bool leaves(const Stmt* stmt) {
  while (const auto* block = dyn_cast_or_null<CompoundStmt>(stmt)) stmt = block->body_empty() ? nullptr : block->body_back();
  if (stmt == nullptr) return false;
  if (isa<ReturnStmt, GotoStmt, BreakStmt, ContinueStmt>(stmt)) return true;
  const auto* last = dyn_cast<Expr>(stmt);
  if (last == nullptr) return false;
  last = last->IgnoreParenCasts();
  if (isa<CXXThrowExpr>(last)) return true;
  const auto* call = dyn_cast<CallExpr>(last);
  const FunctionDecl* callee = call ? call->getDirectCallee() : nullptr;
  return callee != nullptr && callee->isNoReturn();
}

// "Layer", or the typedef's name for C's typedef struct { ... } Layer.
std::string record_name(const RecordDecl* record) {
  if (!record->getName().empty()) return record->getNameAsString();
  if (const TypedefNameDecl* alias = record->getTypedefNameForAnonDecl()) return alias->getNameAsString();
  return "<anonymous>";
}

// What a unit says of a function it defines, for callers in other units:
// "only uses" after the call of the function's parameter named by its key.
constexpr const char* kOnlyUses = "the parameter is only used, not freed or kept";

class MemoryLeak : public FunctionCheck {
 public:
  void onStartOfTranslationUnit() override { reported_.clear(); }

 protected:
  void check(const FunctionFacts& facts) override {
    const FunctionDecl* function = &facts.function();
    context_ = &facts.context();
    tell_other_units(*function);
    if (!facts.uses_cuda()) return;  // every allocation it tracks is a CUDA call
    function_ = function;
    bool allocates = false;
    for_each_stmt(function->getBody(), [&](const Stmt* stmt) {
      if (const auto* call = dyn_cast<CallExpr>(stmt);
          call && (allocation_kind(callee_name(call)) || ownership().returns_allocation(call->getDirectCallee())))
        allocates = true;
    });
    if (!allocates) return;
    collect_frees_and_captures(function->getBody());
    check_field_allocations(function->getBody());
    if (facts.cfg() == nullptr) return;
    const std::vector<LeakPath> exits = run_paths(
        *facts.cfg(), LeakPath{}, kMaxPaths, [this](const Stmt* stmt, LeakPath& path) { step(stmt, path); },
        [this](const CFGBlock& from, unsigned index, LeakPath& path) { return take_edge(from, index, path); });
    for (const LeakPath& path : exits)
      for (const auto& [var, alloc] : path.live) {
        // Leaving main ends the program: only what no path frees is claimed
        // there, or the one buffer a main that frees the others never frees.
        if (function->isMain() && !live_on_every_path(exits, var, alloc) && !forgotten_among_freed(var)) continue;
        if (path.left_at != nullptr)
          leak(alloc, var, path.left_at->getBeginLoc(), return_named(path.left_at));
        else
          leak(alloc, var, function->getBody()->getEndLoc(), "the end of '" + function->getNameAsString() + "'");
      }
    for (const auto& [alloc, field] : handed_to_fields_) field_leak(alloc, field);
  }

 private:
  const SourceManager& sm() const { return context_->getSourceManager(); }

  static bool live_on_every_path(const std::vector<LeakPath>& paths, const VarDecl* var, const CallExpr* alloc) {
    return std::all_of(paths.begin(), paths.end(), [&](const LeakPath& path) {
      auto it = path.live.find(var);
      return it != path.live.end() && it->second == alloc;
    });
  }

  // Is `var` never freed in this function, which frees other buffers it
  // allocated? Then forgetting it is no choice to let the exit release it.
  bool forgotten_among_freed(const VarDecl* var) const {
    if (frees_.count(var)) return false;
    return std::any_of(frees_.begin(), frees_.end(), [&](const auto& entry) { return trackable(entry.first); });
  }

  // "this return", or the checking macro the return is written in: its
  // failure branch is the path that leaks.
  std::string return_named(const ReturnStmt* ret) const {
    clang::SourceLocation loc = ret->getBeginLoc();
    if (!loc.isMacroID()) return "this return";
    while (sm().getImmediateMacroCallerLoc(loc).isMacroID()) loc = sm().getImmediateMacroCallerLoc(loc);
    const StringRef macro = Lexer::getImmediateMacroName(loc, sm(), context_->getLangOpts());
    return macro.empty() ? "this return" : "the return in " + macro.str() + " when the call it checks fails";
  }

  const Ownership& ownership() { return function_facts().ownership(*context_); }

  // Frees of each local (to recognise a branch around one) and what lambdas
  // mention (a lambda may free it).
  void collect_frees_and_captures(const Stmt* body) {
    captured_.clear();
    frees_.clear();
    handed_to_fields_.clear();
    handed_elsewhere_.clear();
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
      if (const auto* call = dyn_cast<CallExpr>(stmt); call && is_cuda_free(callee_name(call)) && call->getNumArgs() > 0) {
        if (const auto* var = dyn_cast_or_null<VarDecl>(pointer_base(call->getArg(0)))) frees_[var].push_back(call);
      } else if (call != nullptr && !isa<CUDAKernelCallExpr>(call)) {
        // A helper of the file that frees its parameter is a free here.
        for (const Expr* arg : call->arguments())
          if (function_facts().sync_summaries().argument_fate(call, arg, *context_) == ParamFate::Frees)
            if (const auto* var = dyn_cast_or_null<VarDecl>(pointer_base(arg))) frees_[var].push_back(call);
      }
      for (const Stmt* child : stmt->children()) collect(child);
    };
    collect(body);
  }

  bool trackable(const VarDecl* var) const {
    return var != nullptr && var->getDeclContext() == function_ && var->isLocalVarDecl() && !var->isStaticLocal() &&
           var->getType()->isPointerType() && !captured_.count(var);
  }

  void leak(const CallExpr* alloc, const VarDecl* var, clang::SourceLocation exit_at, const std::string& exit_what) {
    if (!reported_.insert(alloc).second) return;  // one finding per allocation
    Finding finding = make(sm(), alloc->getBeginLoc(),
                           "'" + var->getNameAsString() + "' allocated by " + callee_name(alloc) +
                               " is not freed on the path that reaches " + exit_what +
                               (function_->isMain()
                                    ? "; main frees its other buffers but this one is still held when the program "
                                      "ends (Compute Sanitizer's --leak-check reports it). Free it like the others"
                                    : "; each call leaks it until the GPU runs out of memory. Free it on every path "
                                      "(or hold it in an RAII owner)"));
    note(finding, sm(), exit_at, "the function is left here without freeing it");
    const auto elsewhere = handed_elsewhere_.find(var);
    if (elsewhere == handed_elsewhere_.end()) {
      report(std::move(finding), alloc->getBeginLoc(), sm());
      return;
    }
    // Handed to functions of other files: a leak only if each of them only
    // uses it, as their own files say.
    DeferredFinding deferred;
    CrossUnitCondition every_callee_only_uses;
    std::vector<const CallExpr*> calls;
    for (const auto& [key, call] : elsewhere->second) {
      every_callee_only_uses &= CrossUnitCondition::after_every_call_of(key);
      calls.push_back(call);
    }
    std::sort(calls.begin(), calls.end(), [&](const CallExpr* a, const CallExpr* b) {
      return sm().isBeforeInTranslationUnit(a->getBeginLoc(), b->getBeginLoc());
    });
    for (const CallExpr* call : calls)
      note(finding, sm(), call->getBeginLoc(),
           "handed to '" + call->getDirectCallee()->getNameAsString() + "', defined in another file, which only uses it");
    deferred.alternatives.push_back({kOnlyUses, every_callee_only_uses, finding.message});
    deferred.finding = std::move(finding);
    deferred.reported_when_none_holds = false;
    report(std::move(deferred), alloc->getBeginLoc(), sm());
  }

  // The key of a function's parameter in the facts of the run.
  std::string parameter_key(const FunctionDecl& function, unsigned param) {
    return function_facts().linkage_name(function, *context_) + "#" + std::to_string(param);
  }

  // Whether each pointer parameter of a function other files can call is
  // only used, for callers there that hand it their allocations.
  void tell_other_units(const FunctionDecl& function) {
    if (!function.isExternallyVisible() || function.isDependentContext() || function.isMain()) return;
    // Most functions take no pointer: no summary is worth building for them.
    const auto params = function.parameters();
    if (std::none_of(params.begin(), params.end(), [](const ParmVarDecl* p) { return p->getType()->isPointerType(); }))
      return;
    const FunctionSummary* summary = function_facts().sync_summaries().of(&function, *context_);
    if (summary == nullptr) return;
    for (unsigned i = 0; i < function.getNumParams() && i < summary->params.size(); ++i)
      if (function.getParamDecl(i)->getType()->isPointerType())
        cross_unit_facts().add_call(kOnlyUses, parameter_key(function, i),
                                    summary->params[i] == ParamFate::Uses ? CrossUnitCondition::always()
                                                                          : CrossUnitCondition::none());
  }

  // The parameter `argument` goes to when the callee is defined in no
  // header or file of this unit but other files may define it.
  std::optional<std::string> parameter_elsewhere(const CallExpr* call, const Expr* argument) {
    const FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr || callee->hasBody() || !callee->isExternallyVisible() || callee->isVariadic()) return {};
    if (sm().isInSystemHeader(sm().getExpansionLoc(callee->getLocation()))) return {};
    const std::optional<unsigned> param = parameter_of(call, argument);
    if (!param) return {};
    return parameter_key(*callee, *param);
  }

  // A field allocated here that the record's destroy function never frees
  // and that nothing else frees or takes over.
  void field_leak(const CallExpr* alloc, const FieldDecl* field) {
    if (field == nullptr || !field->getType()->isPointerType()) return;
    const RecordDecl* record = field->getParent();
    const auto& destroyers = ownership().destroyers(record);
    if (destroyers.empty() || ownership().released_anywhere(field)) return;
    if (!reported_.insert(alloc).second) return;
    const FunctionDecl* destroyer = destroyers.front();
    const std::string owner = record_name(record);
    const std::string destroyer_name = isa<CXXDestructorDecl>(destroyer) ? "the destructor of '" + owner + "'"
                                                                         : "'" + destroyer->getNameAsString() + "'";
    Finding finding = make(sm(), alloc->getBeginLoc(),
                           "'" + owner + "::" + field->getNameAsString() + "' allocated by " + callee_name(alloc) +
                               " is never freed: " + destroyer_name + " frees the other buffers of '" + owner +
                               "' but not this one, so each object leaks it. Free it there");
    note(finding, sm(), destroyer->getLocation(), "the destroy function that forgets it");
    report(std::move(finding), alloc->getBeginLoc(), sm());
  }

  // cudaMalloc(&s->buf) in this function.
  void check_field_allocations(const Stmt* body) {
    for_each_stmt(body, [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr || call->getNumArgs() == 0 || !allocation_kind(callee_name(call))) return;
      const auto* address = dyn_cast<UnaryOperator>(strip(call->getArg(0)));
      if (address != nullptr && address->getOpcode() == UO_AddrOf) field_leak(call, named_field(address));
    });
  }

  const Stmt* parent(const Stmt* stmt) const {
    auto parents = context_->getParents(*stmt);
    return parents.empty() ? nullptr : parents[0].get<Stmt>();
  }

  // The use of `ref` keeps ownership here (CUDA call, launch, index, compare)?
  // A pointer stored into a field is remembered for the record check.
  bool harmless_use(const DeclRefExpr* ref, const CallExpr* alloc) {
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
      if (is_cuda_runtime_api(name) || name == "__cudaPushCallConfiguration" || name == "memcpy" ||
          name == "memset" || name.rfind("curand", 0) == 0)
        return true;
      // A helper of this file that only reads or writes through the pointer
      // leaves it ours to free; one that frees or keeps it takes it over.
      const auto* argument = dyn_cast<Expr>(child);
      if (function_facts().sync_summaries().argument_fate(call, argument, *context_) == ParamFate::Uses) return true;
      // One of another file: its file tells.
      const auto key = parameter_elsewhere(call, argument);
      if (key) handed_elsewhere_[cast<VarDecl>(ref->getDecl())].emplace(*key, call);
      return key.has_value();
    }
    if (isa<ArraySubscriptExpr, MemberExpr>(up)) return true;
    if (const auto* unary = dyn_cast<UnaryOperator>(up)) return unary->getOpcode() != UO_AddrOf;
    if (const auto* binary = dyn_cast<BinaryOperator>(up)) {
      if (binary->getOpcode() == BO_Assign && binary->getRHS() == child)
        if (const FieldDecl* field = named_field(binary->getLHS())) handed_to_fields_.emplace(alloc, field);
      return binary->isComparisonOp() || binary->isLogicalOp() ||
             (binary->isAssignmentOp() && binary->getLHS() == child);
    }
    return isa<IfStmt, WhileStmt, ForStmt, ConditionalOperator>(up);
  }

  // The pointer a call allocates into its local: cudaMalloc(&p), or
  // p = make_buffer(n) for a function of this file that returns fresh memory.
  const VarDecl* allocated_pointer(const CallExpr* call) const {
    if (!allocation_kind(callee_name(call)) || call->getNumArgs() == 0) return nullptr;
    const auto* address = dyn_cast<UnaryOperator>(strip(call->getArg(0)));
    if (address == nullptr || address->getOpcode() != UO_AddrOf) return nullptr;
    return dyn_cast_or_null<VarDecl>(pointer_base(call->getArg(0)));
  }
  const CallExpr* returned_allocation(const Expr* value) {
    const auto* call = dyn_cast_or_null<CallExpr>(strip(value));
    return call && ownership().returns_allocation(call->getDirectCallee()) ? call : nullptr;
  }

  void assign(const VarDecl* var, const Expr* value, LeakPath& path) {
    if (var == nullptr) return;
    path.status_of.erase(var);
    if (const auto* call = dyn_cast_or_null<CallExpr>(strip(value)); call && is_status_type(var->getType()))
      if (const VarDecl* pointer = allocated_pointer(call)) path.status_of[var] = pointer;
    if (!trackable(var)) return;
    if (const CallExpr* call = returned_allocation(value)) path.live[var] = call;
    else path.live.erase(var);  // overwritten with something else: no longer followed
  }

  void step(const Stmt* stmt, LeakPath& path) {
    if (const auto* ret = dyn_cast<ReturnStmt>(stmt)) {
      path.left_at = ret;
      return;
    }
    if (isa<CXXThrowExpr>(stmt)) {
      path.live.clear();  // unwinding is not followed; RAII owners are the remedy there
      return;
    }
    if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      const auto* var = dyn_cast<VarDecl>(ref->getDecl());
      if (auto it = var ? path.live.find(var) : path.live.end(); it != path.live.end() && !harmless_use(ref, it->second))
        path.live.erase(it);  // escapes
      return;
    }
    if (const auto* decls = dyn_cast<DeclStmt>(stmt)) {
      for (const Decl* decl : decls->decls())
        if (const auto* var = dyn_cast<VarDecl>(decl); var && var->getInit()) assign(var, var->getInit(), path);
      return;
    }
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt)) {
      if (binary->isAssignmentOp())
        if (const auto* ref = dyn_cast<DeclRefExpr>(strip(binary->getLHS())))
          assign(dyn_cast<VarDecl>(ref->getDecl()), binary->getOpcode() == BO_Assign ? binary->getRHS() : nullptr, path);
      return;
    }
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    const std::string name = callee_name(call);
    if (name == "cudaDeviceReset") {
      path.live.clear();
      return;
    }
    if (is_cuda_free(name) && call->getNumArgs() > 0) {
      if (const auto* var = dyn_cast_or_null<VarDecl>(pointer_base(call->getArg(0)))) path.live.erase(var);
    } else if (const VarDecl* var = allocated_pointer(call); trackable(var)) {
      path.live[var] = call;
    }
  }

  // Does `cond` test whether a tracked allocation succeeded: its status
  // (the call itself or a variable holding it) or the pointer against null?
  std::optional<SuccessTest> success_test(const Expr* cond, const LeakPath& path) const {
    bool negated = false;  // cond is true when `tested` is zero / null
    const Expr* tested = strip(cond);
    while (tested != nullptr) {
      if (const auto* unary = dyn_cast<UnaryOperator>(tested); unary && unary->getOpcode() == UO_LNot) {
        negated = !negated;
        tested = strip(unary->getSubExpr());
      } else if (const auto* binary = dyn_cast<BinaryOperator>(tested); binary && binary->isEqualityOp()) {
        const bool zero_right = is_zero_constant(binary->getRHS(), *context_);
        if (!zero_right && !is_zero_constant(binary->getLHS(), *context_)) return std::nullopt;
        if (binary->getOpcode() == BO_EQ) negated = !negated;
        tested = strip(zero_right ? binary->getLHS() : binary->getRHS());
      } else if (const auto* binary = dyn_cast<BinaryOperator>(tested); binary && binary->isAssignmentOp()) {
        tested = strip(binary->getLHS());  // (err = cudaMalloc(&p)) != cudaSuccess
      } else {
        break;
      }
    }
    if (tested == nullptr) return std::nullopt;
    // A status is nonzero on failure; a pointer is null on failure.
    if (const auto* call = dyn_cast<CallExpr>(tested))
      if (const VarDecl* pointer = allocated_pointer(call)) return SuccessTest{pointer, !negated};
    const auto* ref = dyn_cast<DeclRefExpr>(tested);
    const auto* var = ref ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
    if (var == nullptr) return std::nullopt;
    if (auto it = path.status_of.find(var); it != path.status_of.end()) return SuccessTest{it->second, !negated};
    if (path.live.count(var)) return SuccessTest{var, negated};
    return std::nullopt;
  }

  // Does taking this edge of `terminator` skip a free of `var` in a branch
  // that would have rejoined (a free under a condition of its own)?
  bool skips_free(const Stmt* terminator, bool taken_true, const VarDecl* var) const {
    auto frees = frees_.find(var);
    if (frees == frees_.end()) return false;
    auto holds_free = [&](const Stmt* stmt) {
      for (const CallExpr* free : frees->second)
        if (contains(stmt, free)) return true;
      return false;
    };
    if (const auto* branch = dyn_cast<IfStmt>(terminator)) {
      const Stmt* skipped = taken_true ? branch->getElse() : branch->getThen();
      return skipped != nullptr && holds_free(skipped) && !leaves(skipped);
    }
    return holds_free(terminator);  // loops, switches, ?: : give up on frees inside them
  }

  bool take_edge(const CFGBlock& from, unsigned index, LeakPath& path) const {
    const Stmt* terminator = from.getTerminatorStmt();
    if (terminator == nullptr || from.succ_size() < 2) return true;
    const bool taken_true = index == 0;
    // Two-way branches only: a switch's edges are cases, not true and false.
    const bool two_way = from.succ_size() == 2 && isa<IfStmt, BinaryOperator, ConditionalOperator, WhileStmt, DoStmt,
                                                      ForStmt>(terminator);
    if (const Expr* cond = two_way ? from.getLastCondition() : nullptr)
      if (auto test = success_test(cond, path); test && taken_true == test->fails_when_true)
        path.live.erase(test->pointer);  // the allocation failed here: nothing to free
    std::erase_if(path.live, [&](const auto& entry) { return skips_free(terminator, taken_true, entry.first); });
    return true;
  }

  ASTContext* context_ = nullptr;
  const FunctionDecl* function_ = nullptr;
  std::set<const ValueDecl*> captured_;
  std::map<const VarDecl*, std::vector<const CallExpr*>> frees_;
  std::set<std::pair<const CallExpr*, const FieldDecl*>> handed_to_fields_;
  std::set<const CallExpr*> reported_;
  // Pointer → the parameters of other files' functions it was handed to.
  std::map<const VarDecl*, std::map<std::string, const CallExpr*>> handed_elsewhere_;
};

GPUDIAG_REGISTER_CHECK(MemoryLeak, "memory-leak");

}  // namespace
}  // namespace gpudiag::lint
