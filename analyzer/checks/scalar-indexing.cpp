// GD005 scalar-indexing: device memory accessed one element at a time from a
// host loop: sizeof(T)-sized cudaMemcpy indexed by the loop, thrust
// device_vector / device_ptr subscripts, gdrt item() and at() on tensors.
#include <clang/AST/ExprCXX.h>

#include "check.h"
#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

bool in_namespace(const CXXRecordDecl* record, std::string_view name) {
  for (const DeclContext* context = record ? record->getDeclContext() : nullptr; context;
       context = context->getParent())
    if (const auto* ns = dyn_cast<NamespaceDecl>(context); ns && ns->getName() == llvm::StringRef(name.data(), name.size())) return true;
  return false;
}

// device_vector's operator[] is vector_base's: the object comes through a
// derived-to-base cast, so look at the expression before the casts.
bool is_thrust_device(const Expr* object) {
  const auto* record = object->IgnoreParenImpCasts()->getType().getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || !record->getDeclName().isIdentifier() || !in_namespace(record, "thrust")) return false;
  const StringRef name = record->getName();
  return name == "device_vector" || name == "device_ptr";
}

// &v[i]: the element's address (a device_ptr), no transfer.
bool address_taken(const Expr* element, ASTContext& context) {
  DynTypedNode node = DynTypedNode::create(*element);
  for (int depth = 0; depth < 8; ++depth) {
    auto parents = context.getParents(node);
    if (parents.empty()) return false;
    node = parents[0];
    const Stmt* parent = node.get<Stmt>();
    if (parent == nullptr) return false;
    if (isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr, ParenExpr>(parent)) continue;
    if (const auto* unary = dyn_cast<UnaryOperator>(parent)) return unary->getOpcode() == UO_AddrOf;
    const auto* op = dyn_cast<CXXOperatorCallExpr>(parent);
    return op != nullptr && op->getOperator() == OO_Amp && op->getNumArgs() == 1;
  }
  return false;
}

// sizeof(T), sizeof x, or a constant of at most 8 bytes.
bool scalar_size(const Expr* size, const ASTContext& context) {
  const Expr* bare = size->IgnoreParenImpCasts();
  if (const auto* trait = dyn_cast<UnaryExprOrTypeTraitExpr>(bare)) return trait->getKind() == UETT_SizeOf;
  Expr::EvalResult value;
  return bare->EvaluateAsInt(value, context) && value.Val.getInt().getExtValue() <= 8;
}

// Variables the loop steps through: declared in a for-init or changed by ++/--/+=.
std::vector<const ValueDecl*> induction_variables(const Stmt* loop) {
  std::vector<const ValueDecl*> vars;
  if (const auto* range = dyn_cast<CXXForRangeStmt>(loop)) vars.push_back(range->getLoopVariable());
  for_each_stmt(loop, [&](const Stmt* stmt) {
    if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->isIncrementDecrementOp())
      if (const auto* ref = dyn_cast<DeclRefExpr>(unary->getSubExpr()->IgnoreParenImpCasts()))
        vars.push_back(ref->getDecl());
    if (const auto* assign = dyn_cast<CompoundAssignOperator>(stmt))
      if (const auto* ref = dyn_cast<DeclRefExpr>(assign->getLHS()->IgnoreParenImpCasts()))
        vars.push_back(ref->getDecl());
  });
  return vars;
}

class ScalarIndexing : public Check {
 public:
  void register_matchers(MatchFinder& finder) override {
    auto in_loop = hasAncestor(stmt(anyOf(forStmt(), whileStmt(), doStmt(), cxxForRangeStmt())));
    finder.addMatcher(callExpr(unless(isExpansionInSystemHeader()), in_loop,
                               callee(functionDecl(hasAnyName("cudaMemcpy", "cudaMemcpyAsync"))))
                          .bind("copy"),
                      this);
    finder.addMatcher(cxxOperatorCallExpr(unless(isExpansionInSystemHeader()), in_loop,
                                          hasAnyOverloadedOperatorName("[]", "*"))
                          .bind("operator"),
                      this);
    finder.addMatcher(cxxMemberCallExpr(unless(isExpansionInSystemHeader()), in_loop,
                                        callee(cxxMethodDecl(hasAnyName("item", "at"), ofClass(hasName("::gdrt::Tensor")))))
                          .bind("item"),
                      this);
  }

  void run(const MatchFinder::MatchResult& result) override {
    ASTContext& context = *result.Context;
    const SourceManager& sm = context.getSourceManager();
    if (const auto* call = result.Nodes.getNodeAs<CallExpr>("copy")) {
      auto copy = as_copy(call);
      if (!copy || !scalar_size(copy->size, context)) return;
      const Stmt* loop = enclosing_loop(call, context);
      const Expr* device_side = copy->kind == CopyKind::HostToDevice ? copy->dst : copy->src;
      if (loop == nullptr || (copy->kind != CopyKind::HostToDevice && copy->kind != CopyKind::DeviceToHost)) return;
      bool indexed = false;
      for (const ValueDecl* var : induction_variables(loop)) indexed |= mentions(device_side, var);
      if (!indexed) return;
      Finding finding = make(sm, call->getBeginLoc(),
                             "this loop copies device memory one element per " + callee_name(call) +
                                 "; each copy costs a full transfer latency (~10 us), so N elements take N "
                                 "round trips. Copy the whole range with one cudaMemcpy, or compute it in a kernel");
      note(finding, sm, loop->getBeginLoc(), "the loop");
      report(std::move(finding), call->getBeginLoc(), sm);
      return;
    }
    if (const auto* op = result.Nodes.getNodeAs<CXXOperatorCallExpr>("operator")) {
      // One access is one transfer; do { } while (0) in a macro is no loop.
      if (op->getNumArgs() < 1 || !is_thrust_device(op->getArg(0)) || enclosing_loop(op, context) == nullptr ||
          address_taken(op, context))
        return;
      report(make(sm, op->getBeginLoc(),
                  "element access to a thrust device container inside a host loop: every access is a separate "
                  "device transfer. Copy it to a thrust::host_vector once, or use a thrust algorithm / kernel"),
             op->getBeginLoc(), sm);
      return;
    }
    if (const auto* item = result.Nodes.getNodeAs<CXXMemberCallExpr>("item")) {
      const std::string method = item->getMethodDecl()->getName().str();
      report(make(sm, item->getBeginLoc(),
                  "Tensor::" + method + "() inside a loop: on a device tensor each call is a blocking one-element "
                  "transfer. Move the tensor to the host once (to(cpu)) or reduce on the device"),
             item->getBeginLoc(), sm);
    }
  }
};

GPUDIAG_REGISTER_CHECK(ScalarIndexing, "scalar-indexing");

}  // namespace
}  // namespace gpudiag::lint
