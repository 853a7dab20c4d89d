#include "guards.h"

#include <optional>
#include <string>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>

#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

struct Guard {
  const VarDecl* var;
  bool value;  // the branch: the variable tested true, or false
};

// `v` or `!v` for a local or a parameter held by value.
std::optional<Guard> plain_test(const Expr* condition) {
  if (condition == nullptr) return std::nullopt;
  bool value = true;
  const Expr* e = condition->IgnoreParenImpCasts();
  while (const auto* unary = dyn_cast<UnaryOperator>(e)) {
    if (unary->getOpcode() != UO_LNot) return std::nullopt;
    value = !value;
    e = unary->getSubExpr()->IgnoreParenImpCasts();
  }
  const auto* ref = dyn_cast<DeclRefExpr>(e);
  const auto* var = ref != nullptr ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
  if (var == nullptr || !(var->isLocalVarDecl() || isa<ParmVarDecl>(var)) || var->getType()->isReferenceType())
    return std::nullopt;
  return Guard{var, value};
}

// Every use of `var` in `region` only reads it (no assignment, ++, &, or
// binding to a reference), and no lambda of the function captures it by
// reference: its value is the same wherever `region` tests it.
bool unchanged_in(const VarDecl* var, const Stmt* region, const Stmt* body, ASTContext& context) {
  bool written = false;
  for_each_stmt(body, [&](const Stmt* stmt) {
    if (const auto* lambda = dyn_cast<LambdaExpr>(stmt))
      for (const LambdaCapture& capture : lambda->captures())
        if (capture.capturesVariable() && capture.getCapturedVar() == var && capture.getCaptureKind() == LCK_ByRef)
          written = true;
  });
  for_each_stmt(region, [&](const Stmt* stmt) {
    if (written) return;
    const auto* ref = dyn_cast<DeclRefExpr>(stmt);
    if (ref == nullptr || ref->getDecl() != var) return;
    auto parents = context.getParents(*ref);
    const auto* cast = parents.empty() ? nullptr : parents[0].get<ImplicitCastExpr>();
    written = cast == nullptr || cast->getCastKind() != CK_LValueToRValue;
  });
  return !written;
}

// Is `stmt` inside the branch of an `if` that tests `guard` and takes its branch?
bool under(const Stmt* stmt, const Guard& guard, const Stmt* body, ASTContext& context) {
  DynTypedNode node = DynTypedNode::create(*stmt);
  for (int depth = 0; depth < 512 && node.get<Stmt>() != body; ++depth) {
    auto parents = context.getParents(node);
    if (parents.empty()) return false;
    if (const auto* if_stmt = parents[0].get<IfStmt>()) {
      const Stmt* child = node.get<Stmt>();
      if (child != nullptr && (child == if_stmt->getThen() || child == if_stmt->getElse()))
        if (auto test = plain_test(if_stmt->getCond()); test && test->var == guard.var) {
          const bool value = child == if_stmt->getThen() ? test->value : !test->value;
          if (value == guard.value) return true;
        }
    }
    node = parents[0];
  }
  return false;
}

std::string spelled(const Stmt* stmt, ASTContext& context) {
  if (stmt == nullptr) return {};
  const CharSourceRange range = CharSourceRange::getTokenRange(stmt->getSourceRange());
  return Lexer::getSourceText(range, context.getSourceManager(), context.getLangOpts()).str();
}

// Do two loops have the same header, as written (for: init and condition;
// while: condition; range-for: range)? Then one runs its body whenever the
// other did: `for (d = 0; d < n; ++d) launch on stream[d];` and then `for (d
// = 0; d < n; ++d) sync stream[d];`. What the header reads may change
// between them; a missed finding is better than a false one.
bool same_header(const Stmt* a, const Stmt* b, ASTContext& context) {
  if (a->getStmtClass() != b->getStmtClass()) return false;
  const auto same = [&](const Stmt* x, const Stmt* y) {
    const std::string text = spelled(x, context);
    return !text.empty() && text == spelled(y, context);
  };
  if (const auto* loop = dyn_cast<ForStmt>(a)) {
    const auto* twin = cast<ForStmt>(b);
    return same(loop->getCond(), twin->getCond()) &&
           (loop->getInit() == nullptr ? twin->getInit() == nullptr : same(loop->getInit(), twin->getInit()));
  }
  if (const auto* loop = dyn_cast<WhileStmt>(a)) return same(loop->getCond(), cast<WhileStmt>(b)->getCond());
  if (const auto* loop = dyn_cast<CXXForRangeStmt>(a))
    return same(loop->getRangeInit(), cast<CXXForRangeStmt>(b)->getRangeInit());
  return false;
}

const Stmt* loop_body(const Stmt* loop) {
  if (const auto* l = dyn_cast<ForStmt>(loop)) return l->getBody();
  if (const auto* l = dyn_cast<WhileStmt>(loop)) return l->getBody();
  if (const auto* l = dyn_cast<CXXForRangeStmt>(loop)) return l->getBody();
  return nullptr;
}

// Is `earlier` in the body of another loop with the same header as `loop`?
bool in_twin_loop(const Stmt* loop, const Stmt* earlier, ASTContext& context) {
  DynTypedNode node = DynTypedNode::create(*earlier);
  for (int depth = 0; depth < 512; ++depth) {
    auto parents = context.getParents(node);
    if (parents.empty() || parents[0].get<LambdaExpr>() != nullptr || parents[0].get<FunctionDecl>() != nullptr)
      return false;
    const Stmt* parent = parents[0].get<Stmt>();
    if (parent != nullptr && parent != loop && node.get<Stmt>() != nullptr && loop_body(parent) == node.get<Stmt>() &&
        same_header(parent, loop, context))
      return true;
    node = parents[0];
  }
  return false;
}

// Does entering `child` of `parent` happen whenever `earlier` ran? `region`
// holds both statements: a flag written outside it keeps its value between them.
bool entered_whenever(const Stmt* parent, const Stmt* child, const Stmt* earlier, const Stmt* region,
                      const Stmt* body, ASTContext& context) {
  if (child != nullptr && contains(child, earlier)) return true;  // same branch, same iteration
  if (const auto* if_stmt = dyn_cast<IfStmt>(parent)) {
    if (child != if_stmt->getThen() && child != if_stmt->getElse()) return true;  // the condition
    auto test = plain_test(if_stmt->getCond());
    if (!test) return false;
    const Guard branch{test->var, child == if_stmt->getThen() ? test->value : !test->value};
    return unchanged_in(branch.var, region, body, context) && under(earlier, branch, body, context);
  }
  if (isa<DoStmt>(parent)) return true;  // its body runs at least once
  if (const auto* loop = dyn_cast<ForStmt>(parent))
    return child == loop->getInit() || child == loop->getCond() ||
           (child == loop->getBody() && in_twin_loop(loop, earlier, context));
  if (const auto* loop = dyn_cast<WhileStmt>(parent))
    return child == loop->getCond() || (child == loop->getBody() && in_twin_loop(loop, earlier, context));
  if (const auto* loop = dyn_cast<CXXForRangeStmt>(parent))
    return (child != loop->getBody() && child != loop->getLoopVarStmt()) ||
           (child == loop->getBody() && in_twin_loop(loop, earlier, context));
  if (const auto* select = dyn_cast<SwitchStmt>(parent)) return child == select->getCond() || child == select->getInit();
  if (const auto* choice = dyn_cast<ConditionalOperator>(parent)) return child == choice->getCond();
  if (const auto* logic = dyn_cast<BinaryOperator>(parent); logic && logic->isLogicalOp())
    return child == logic->getLHS();
  if (isa<CXXCatchStmt>(parent)) return false;
  return true;
}

}  // namespace

bool runs_whenever(const Stmt* later, const Stmt* earlier, const FunctionDecl& function, ASTContext& context) {
  const Stmt* body = function.getBody();
  if (body == nullptr || later == nullptr || earlier == nullptr) return false;
  // The innermost statement holding both.
  const Stmt* region = nullptr;
  for (DynTypedNode node = DynTypedNode::create(*later); region == nullptr;) {
    const Stmt* stmt = node.get<Stmt>();
    if (stmt != nullptr && contains(stmt, earlier)) region = stmt;
    if (stmt == body) break;
    auto parents = context.getParents(node);
    if (parents.empty()) return false;
    node = parents[0];
  }
  if (region == nullptr) return false;
  DynTypedNode node = DynTypedNode::create(*later);
  for (int depth = 0; depth < 512; ++depth) {
    if (node.get<Stmt>() == body) return true;
    auto parents = context.getParents(node);
    if (parents.empty() || parents[0].get<LambdaExpr>() != nullptr || parents[0].get<FunctionDecl>() != nullptr)
      return false;
    if (const Stmt* parent = parents[0].get<Stmt>();
        parent != nullptr && !entered_whenever(parent, node.get<Stmt>(), earlier, region, body, context))
      return false;
    node = parents[0];
  }
  return false;
}

}  // namespace gpudiag::lint
