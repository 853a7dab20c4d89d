#include "ownership.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include "cuda_model.h"

namespace gpudiag::lint {
using namespace clang;

const FieldDecl* named_field(const Expr* expr) {
  if (expr == nullptr) return nullptr;
  expr = expr->IgnoreParenCasts();
  if (const auto* unary = dyn_cast<UnaryOperator>(expr); unary && unary->getOpcode() == UO_AddrOf)
    expr = unary->getSubExpr()->IgnoreParenCasts();
  const auto* member = dyn_cast<MemberExpr>(expr);
  return member ? dyn_cast<FieldDecl>(member->getMemberDecl()) : nullptr;
}

namespace {

// The record of the object a field access goes through, when that object is
// one the function was handed: a parameter (R*, R&, R) or `this`; nullptr
// for a local or global object.
const RecordDecl* handed_object(const Expr* pointer, const FunctionDecl& function) {
  if (pointer == nullptr) return nullptr;
  const auto* member = dyn_cast<MemberExpr>(pointer->IgnoreParenCasts());
  if (member == nullptr) return nullptr;
  const Expr* base = member->getBase()->IgnoreParenImpCasts();
  if (isa<CXXThisExpr>(base)) return isa<CXXMethodDecl>(function) ? cast<CXXMethodDecl>(function).getParent() : nullptr;
  const auto* ref = dyn_cast<DeclRefExpr>(base);
  if (ref == nullptr || !isa<ParmVarDecl>(ref->getDecl())) return nullptr;
  QualType type = ref->getDecl()->getType().getNonReferenceType();
  if (type->isPointerType()) type = type->getPointeeType();
  return type->getAsRecordDecl();
}

// Records whose fields cannot be followed one to one (templates, unions).
bool plain_record(const RecordDecl* record) {
  if (record == nullptr || record->isUnion() || record->isDependentContext()) return false;
  if (const auto* cxx = dyn_cast<CXXRecordDecl>(record))
    return cxx->getDescribedClassTemplate() == nullptr && !isa<ClassTemplateSpecializationDecl>(cxx);
  return true;
}

}  // namespace

class OwnershipCollector : public RecursiveASTVisitor<OwnershipCollector> {
 public:
  explicit OwnershipCollector(Ownership& out) : out_(out) {}

  bool TraverseFunctionDecl(FunctionDecl* function) { return traverse_function(function, [&] {
    return RecursiveASTVisitor::TraverseFunctionDecl(function); }); }
  bool TraverseCXXMethodDecl(CXXMethodDecl* function) { return traverse_function(function, [&] {
    return RecursiveASTVisitor::TraverseCXXMethodDecl(function); }); }
  bool TraverseCXXDestructorDecl(CXXDestructorDecl* function) { return traverse_function(function, [&] {
    return RecursiveASTVisitor::TraverseCXXDestructorDecl(function); }); }
  bool TraverseCXXConstructorDecl(CXXConstructorDecl* function) { return traverse_function(function, [&] {
    return RecursiveASTVisitor::TraverseCXXConstructorDecl(function); }); }

  bool VisitCallExpr(CallExpr* call) {
    const std::string name = callee_name(call);
    if (is_cuda_free(name)) {
      const Expr* freed = call->getNumArgs() > 0 ? call->getArg(0) : nullptr;
      if (const FieldDecl* field = named_field(freed)) {
        out_.released_.insert(field);
        // Filed under the record that declares the field, which may be a base
        // of the object's own type.
        if (function_ != nullptr && handed_object(freed, *function_) != nullptr)
          if (const RecordDecl* record = field->getParent(); plain_record(record)) {
            auto& list = out_.destroyers_[record];
            if (list.empty() || list.back() != function_) list.push_back(function_);
          }
      }
      return true;
    }
    // A field handed to other code (a helper that frees it, std::swap, a
    // container) is that code's to release.
    if (isa<CUDAKernelCallExpr>(call) || is_cuda_runtime_api(name)) return true;
    for (const Expr* arg : call->arguments()) release_if_field(arg);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr* construct) {
    for (const Expr* arg : construct->arguments()) release_if_field(arg);
    return true;
  }
  bool VisitBinaryOperator(BinaryOperator* binary) {
    if (binary->isAssignmentOp()) release_if_field(binary->getRHS());
    return true;
  }
  bool VisitVarDecl(VarDecl* var) {
    if (var->getType()->isPointerType()) release_if_field(var->getInit());
    return true;
  }
  bool VisitInitListExpr(InitListExpr* list) {
    for (const Expr* init : list->inits()) release_if_field(init);  // float* all[] = {s->a, s->b};
    return true;
  }
  bool VisitReturnStmt(ReturnStmt* ret) {
    release_if_field(ret->getRetValue());
    return true;
  }

 private:
  template <typename Traverse>
  bool traverse_function(FunctionDecl* function, Traverse&& traverse) {
    const FunctionDecl* outer = function_;
    function_ = function->isDependentContext() ? nullptr : function;
    if (function_ != nullptr && function_->hasBody()) note_returned_allocation(*function_);
    const bool result = traverse();
    function_ = outer;
    return result;
  }

  void release_if_field(const Expr* expr) {
    if (expr == nullptr) return;
    const Expr* stripped = expr->IgnoreParenCasts();
    if (const auto* unary = dyn_cast<UnaryOperator>(stripped); unary && unary->getOpcode() == UO_AddrOf)
      stripped = unary->getSubExpr()->IgnoreParenCasts();
    if (const auto* member = dyn_cast<MemberExpr>(stripped))
      if (const auto* field = dyn_cast<FieldDecl>(member->getMemberDecl()); field && field->getType()->isPointerType())
        out_.released_.insert(field);
  }

  // float* make(n) { float* p; if (cudaMalloc(&p, n) != cudaSuccess) return nullptr; return p; }
  void note_returned_allocation(const FunctionDecl& function) {
    if (!function.getReturnType()->isPointerType()) return;
    std::set<const ValueDecl*> allocated, freed, returned;
    bool returns_other = false, returns_some = false;
    for_each_stmt(function.getBody(), [&](const Stmt* stmt) {
      if (const auto* call = dyn_cast<CallExpr>(stmt)) {
        const std::string name = callee_name(call);
        const auto* address = call->getNumArgs() > 0 ? dyn_cast<UnaryOperator>(call->getArg(0)->IgnoreParenCasts())
                                                     : nullptr;
        const ValueDecl* target = call->getNumArgs() > 0 ? pointer_base(call->getArg(0)) : nullptr;
        if (allocation_kind(name) && address && address->getOpcode() == UO_AddrOf && target) allocated.insert(target);
        if (is_cuda_free(name) && target) freed.insert(target);
      } else if (const auto* ret = dyn_cast<ReturnStmt>(stmt)) {
        const Expr* value = ret->getRetValue();
        if (value == nullptr || value->isNullPointerConstant(function.getASTContext(),
                                                             Expr::NPC_ValueDependentIsNotNull))
          return;
        const auto* ref = dyn_cast<DeclRefExpr>(value->IgnoreParenCasts());
        const auto* var = ref ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
        if (var != nullptr && var->isLocalVarDecl() && !var->isStaticLocal()) {
          returned.insert(var);
          returns_some = true;
        } else {
          returns_other = true;
        }
      }
    });
    bool all_allocated = returns_some && !returns_other;
    for (const ValueDecl* var : returned) all_allocated = all_allocated && allocated.count(var) && !freed.count(var);
    if (all_allocated) out_.returns_allocation_.insert(function.getCanonicalDecl());
  }

  Ownership& out_;
  const FunctionDecl* function_ = nullptr;
};

Ownership::Ownership(ASTContext& context) {
  OwnershipCollector collector(*this);
  collector.TraverseAST(context);
}

const std::vector<const FunctionDecl*>& Ownership::destroyers(const RecordDecl* record) const {
  static const std::vector<const FunctionDecl*> kNone;
  if (record == nullptr) return kNone;
  auto it = destroyers_.find(record);
  return it == destroyers_.end() ? kNone : it->second;
}

bool Ownership::released_anywhere(const FieldDecl* field) const { return released_.count(field) != 0; }

bool Ownership::returns_allocation(const FunctionDecl* function) const {
  return function != nullptr && returns_allocation_.count(function->getCanonicalDecl()) != 0;
}

}  // namespace gpudiag::lint
