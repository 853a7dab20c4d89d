#include "provenance_facts.h"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

namespace gpudiag::lint {
using namespace clang;

const FunctionDecl* canonical(const FunctionDecl* function) {
  return function != nullptr ? function->getCanonicalDecl() : nullptr;
}

bool is_out_pointer(QualType type) { return type->isPointerType() && type->getPointeeType()->isPointerType(); }

bool is_pointer_reference(QualType type) {
  return type->isLValueReferenceType() && type.getNonReferenceType()->isPointerType() &&
         !type.getNonReferenceType().isConstQualified();
}

const FieldDecl* pointer_field(const Expr* expr) {
  const auto* member = dyn_cast_or_null<MemberExpr>(expr ? expr->IgnoreParenImpCasts() : nullptr);
  const auto* field = member ? dyn_cast<FieldDecl>(member->getMemberDecl()) : nullptr;
  return field != nullptr && field->getType()->isPointerType() ? field : nullptr;
}

bool may_infer_parameters(const FunctionDecl* function) {
  if (is_device_or_global(function) && !function->hasAttr<CUDAHostAttr>()) return false;
  if (isa<CXXConstructorDecl, CXXDestructorDecl, CXXConversionDecl>(function) || function->isOverloadedOperator() ||
      function->isMain())
    return false;
  const auto* method = dyn_cast<CXXMethodDecl>(function);
  return method == nullptr || !method->isVirtual();
}

namespace {

// The parameter of `function` that `expr` names, when it is a T** parameter.
const ParmVarDecl* out_parameter(const Expr* expr, const FunctionDecl* function) {
  const auto* ref = dyn_cast_or_null<DeclRefExpr>(expr ? expr->IgnoreParenCasts() : nullptr);
  const auto* param = ref ? dyn_cast<ParmVarDecl>(ref->getDecl()) : nullptr;
  if (param == nullptr || function == nullptr || param->getDeclContext() != function) return nullptr;
  return is_out_pointer(param->getType()) ? param : nullptr;
}

// The callee's name as the call spells it, so a call is told apart from
// any other mention of the function (its address taken).
const Expr* callee_reference(const CallExpr* call) {
  const Expr* callee = call->getCallee();
  if (callee == nullptr || call->getDirectCallee() == nullptr) return nullptr;
  callee = callee->IgnoreParenImpCasts();
  if (const auto* ref = dyn_cast<DeclRefExpr>(callee); ref && ref->getDecl() == call->getDirectCallee()) return ref;
  if (const auto* member = dyn_cast<MemberExpr>(callee); member && member->getMemberDecl() == call->getDirectCallee())
    return member;
  return nullptr;
}

// Collects the stores, calls and function references of the user's code.
class Collector : public RecursiveASTVisitor<Collector> {
  using Base = RecursiveASTVisitor<Collector>;
  using Store = ProvenanceFacts::Store;
  using CallSite = ProvenanceFacts::CallSite;

 public:
  Collector(ProvenanceFacts& facts, const SourceManager& sm) : facts_(facts), sm_(sm) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl* decl) {
    if (decl == nullptr) return true;
    if (decl->getLocation().isValid() && sm_.isInSystemHeader(sm_.getExpansionLoc(decl->getLocation()))) return true;
    const auto* function = dyn_cast<FunctionDecl>(decl);
    if (function == nullptr) return Base::TraverseDecl(decl);
    // A template's pattern says nothing definite; its instantiations are visited.
    if (function->isDependentContext()) return true;
    const bool defined = function->doesThisDeclarationHaveABody();
    if (defined) facts_.functions.push_back(function);
    stack_.push_back(defined ? function : nullptr);
    const bool result = Base::TraverseDecl(decl);
    stack_.pop_back();
    return result;
  }
  // A lambda body is another function, whose variables are not the enclosing one's.
  bool TraverseLambdaExpr(LambdaExpr* lambda) {
    stack_.push_back(nullptr);
    const bool result = Base::TraverseLambdaExpr(lambda);
    stack_.pop_back();
    return result;
  }
  bool TraverseConstructorInitializer(CXXCtorInitializer* init) {
    if (init != nullptr && init->isMemberInitializer())
      if (const FieldDecl* field = init->getMember(); field && field->getType()->isPointerType())
        facts_.field_stores[field].push_back(Store{current(), init->getInit()});
    return Base::TraverseConstructorInitializer(init);
  }

  // float* buf_ = (float*)malloc(n): the default of every constructor that
  // does not initialise the field itself (an implicit one is not traversed).
  bool VisitFieldDecl(FieldDecl* field) {
    if (field->getType()->isPointerType() && field->hasInClassInitializer() && field->getInClassInitializer())
      facts_.field_stores[field].push_back(Store{nullptr, field->getInClassInitializer()});
    return true;
  }

  bool VisitCallExpr(CallExpr* call) {
    on_call_stores(call);
    const FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) return true;
    if (const Expr* ref = callee_reference(call); ref && current() && !isa<CXXOperatorCallExpr>(call)) {
      facts_.calls[canonical(callee)].push_back(CallSite{current(), call});
      callee_references_.insert(ref);
    }
    return true;
  }
  // &s->buf kept or handed on other than to a call seen above, or a T*&
  // bound to it: the field may be assigned out of sight.
  bool VisitUnaryOperator(UnaryOperator* unary) {
    if (unary->getOpcode() != UO_AddrOf || stored_addresses_.count(unary)) return true;
    if (const FieldDecl* field = pointer_field(unary->getSubExpr()))
      facts_.field_stores[field].push_back(Store{current()});
    return true;
  }
  bool VisitVarDecl(VarDecl* var) {
    if (var->hasInit() && is_pointer_reference(var->getType()))
      if (const FieldDecl* field = pointer_field(var->getInit())) facts_.field_stores[field].push_back(Store{current()});
    return true;
  }
  bool VisitBinaryOperator(BinaryOperator* binary) {
    if (binary->getOpcode() != BO_Assign) return true;
    const Expr* target = binary->getLHS()->IgnoreParenImpCasts();
    if (const FieldDecl* field = pointer_field(target)) {
      facts_.field_stores[field].push_back(Store{current(), binary->getRHS()});
    } else if (const auto* unary = dyn_cast<UnaryOperator>(target); unary && unary->getOpcode() == UO_Deref) {
      if (const ParmVarDecl* param = out_parameter(unary->getSubExpr(), current()))
        facts_.out_stores[param].push_back(Store{current(), binary->getRHS()});
    } else if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(target)) {
      // pp[i] = ...: an array of pointers, not one pointer handed back.
      if (const ParmVarDecl* param = out_parameter(subscript->getBase(), current()))
        facts_.out_stores[param].push_back(Store{current()});
    }
    return true;
  }
  bool VisitReturnStmt(ReturnStmt* ret) {
    const FunctionDecl* function = current();
    if (function != nullptr && ret->getRetValue() != nullptr && function->getReturnType()->isPointerType())
      facts_.returns[canonical(function)].push_back(Store{function, ret->getRetValue()});
    return true;
  }
  // S s{ptr, ...}: aggregate initialisation stores into the fields.
  bool VisitInitListExpr(InitListExpr* list) {
    if (!list->isSemanticForm()) return true;
    const auto* record = list->getType()->getAsRecordDecl();
    if (record == nullptr || record->isUnion()) return true;
    unsigned index = 0;
    if (const auto* cxx = dyn_cast<CXXRecordDecl>(record); cxx && cxx->hasDefinition()) index = cxx->getNumBases();
    for (const FieldDecl* field : record->fields()) {
      if (field->isUnnamedBitField()) return true;  // not initialised: the indexes no longer line up
      if (index >= list->getNumInits()) break;
      const Expr* init = list->getInit(index++);
      if (field->getType()->isPointerType()) facts_.field_stores[field].push_back(Store{current(), init});
    }
    return true;
  }

  // Every mention of a function that is not the callee of a call seen above
  // (its address taken, a call from a lambda or an initialiser) means its
  // callers are not all known.
  bool VisitDeclRefExpr(DeclRefExpr* ref) {
    note_reference(ref, ref->getDecl());
    return true;
  }
  bool VisitMemberExpr(MemberExpr* member) {
    note_reference(member, member->getMemberDecl());
    return true;
  }
  bool VisitOverloadExpr(OverloadExpr* overload) {
    for (const NamedDecl* decl : overload->decls())
      if (const FunctionDecl* function = decl->getAsFunction()) facts_.escaped.insert(canonical(function));
    return true;
  }

 private:
  const FunctionDecl* current() const { return stack_.empty() ? nullptr : stack_.back(); }

  void note_reference(const Expr* ref, const ValueDecl* decl) {
    const auto* function = dyn_cast_or_null<FunctionDecl>(decl);
    if (function != nullptr && !callee_references_.count(ref)) facts_.escaped.insert(canonical(function));
  }

  // cudaMalloc(&s->buf), alloc(&s->buf), cudaMalloc(out) with out a T**
  // parameter, and a field bound to a T*& parameter.
  void on_call_stores(const CallExpr* call) {
    const std::string name = callee_name(call);
    const auto kind = allocation_kind(name);
    const FunctionDecl* callee = call->getDirectCallee();
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      if (call->getArg(i) == nullptr) continue;
      const Expr* arg = call->getArg(i)->IgnoreParenCasts();
      std::vector<Store>* slot = nullptr;
      if (const auto* unary = dyn_cast<UnaryOperator>(arg); unary && unary->getOpcode() == UO_AddrOf) {
        if (const FieldDecl* field = pointer_field(unary->getSubExpr())) {
          slot = &facts_.field_stores[field];
          stored_addresses_.insert(unary);
        }
      } else if (const ParmVarDecl* param = out_parameter(arg, current())) {
        slot = &facts_.out_stores[param];
      } else if (const FieldDecl* field = pointer_field(arg);
                 field && callee && !isa<CXXOperatorCallExpr>(call) && i < callee->getNumParams() &&
                 is_pointer_reference(callee->getParamDecl(i)->getType())) {
        slot = &facts_.field_stores[field];
      }
      if (slot == nullptr) continue;
      Store store{current()};
      if (kind && i == 0) store.allocation = Origin{*kind, call->getBeginLoc(), name};
      else {
        store.through = call;
        store.arg = i;
      }
      slot->push_back(std::move(store));
    }
  }

  ProvenanceFacts& facts_;
  const SourceManager& sm_;
  std::vector<const FunctionDecl*> stack_;
  std::set<const Expr*> callee_references_;
  std::set<const UnaryOperator*> stored_addresses_;
};

}  // namespace

void collect_provenance_facts(ASTContext& context, ProvenanceFacts& facts) {
  Collector collector(facts, context.getSourceManager());
  collector.TraverseAST(context);
}

}  // namespace gpudiag::lint
