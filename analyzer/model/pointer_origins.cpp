#include "pointer_origins.h"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>

namespace gpudiag::lint {

using namespace clang;

namespace {

bool default_allocator(const TemplateArgument& allocator) {
  if (allocator.getKind() != TemplateArgument::Type) return false;
  const auto* record = allocator.getAsType()->getAsCXXRecordDecl();
  return record != nullptr && record->getDeclName().isIdentifier() && record->getName() == "allocator" &&
         record->isInStdNamespace();
}

}  // namespace

const char* pageable_container(QualType type) {
  const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || !record->getDeclName().isIdentifier() || !record->isInStdNamespace()) return nullptr;
  const llvm::StringRef name = record->getName();
  // std::array holds its elements inline, in whatever memory holds it.
  if (name == "array") return "std::array";
  // The allocator decides where the elements go (a pinned allocator pins them).
  const unsigned allocator_at = name == "vector" ? 1 : name == "basic_string" ? 2 : 0;
  if (allocator_at == 0) return nullptr;
  const auto* specialization = dyn_cast<ClassTemplateSpecializationDecl>(record);
  if (specialization != nullptr && specialization->getTemplateArgs().size() > allocator_at &&
      !default_allocator(specialization->getTemplateArgs()[allocator_at]))
    return nullptr;
  return name == "vector" ? "std::vector" : "std::string";
}

namespace {
bool is_pageable_container(QualType type) { return pageable_container(type) != nullptr; }

}  // namespace

ValueSource classify_pointer_value(const Expr* value, const OriginHints* hints) {
  ValueSource source;
  if (value == nullptr) return source;
  const Expr* bare = value->IgnoreParenCasts();
  if (isa<CXXNullPtrLiteralExpr>(bare) || isa<GNUNullExpr>(bare)) return source;
  if (const auto* literal = dyn_cast<IntegerLiteral>(bare); literal && literal->getValue() == 0) return source;
  if (const auto* call = dyn_cast<CallExpr>(bare)) {
    const std::string name = callee_name(call);
    if (name == "malloc" || name == "calloc" || name == "realloc" || name == "aligned_alloc") {
      source.origin = Origin{MemKind::HostPageable, value->getBeginLoc(), name};
      return source;
    }
    if (hints != nullptr) source.origin = hints->returned(*call);
  }
  if (isa<CXXNewExpr>(bare)) {
    source.origin = Origin{MemKind::HostPageable, value->getBeginLoc(), "new"};
    return source;
  }
  if (hints != nullptr && isa<MemberExpr>(bare))
    if (const auto* field = dyn_cast_or_null<FieldDecl>(pointer_base(bare, true))) source.origin = hints->field(*field);
  source.unknown = !source.origin;
  return source;
}

namespace {
using Source = ValueSource;

// Does argument i bind to a T*& parameter, through which the callee may
// assign the caller's pointer?
bool binds_pointer_reference(const CallExpr* call, unsigned i) {
  const FunctionDecl* callee = call->getDirectCallee();
  if (callee == nullptr || isa<CXXOperatorCallExpr>(call) || i >= callee->getNumParams()) return false;
  const QualType type = callee->getParamDecl(i)->getType();
  return type->isLValueReferenceType() && type.getNonReferenceType()->isPointerType() &&
         !type.getNonReferenceType().isConstQualified();
}

class OriginCollector {
 public:
  explicit OriginCollector(const OriginHints* hints) : hints_(hints) {}
  // What every caller passes, before the body reassigns anything.
  void start(const FunctionDecl& function) {
    if (hints_ == nullptr) return;
    for (const ParmVarDecl* param : function.parameters())
      if (param->getType()->isPointerType())
        if (auto origin = hints_->parameter(*param)) merge(param, Source{false, origin});
  }
  void visit(const Stmt* stmt) {
    if (stmt == nullptr) return;
    if (const auto* decl_stmt = dyn_cast<DeclStmt>(stmt)) {
      for (const Decl* decl : decl_stmt->decls())
        if (const auto* var = dyn_cast<VarDecl>(decl)) on_var(var);
    } else if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->getOpcode() == BO_Assign) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(binary->getLHS()->IgnoreParenImpCasts()))
        merge(ref->getDecl(), value_source(binary->getRHS()));
    } else if (const auto* call = dyn_cast<CallExpr>(stmt)) {
      on_call(call);
    } else if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      if (isa<ParmVarDecl>(ref->getDecl())) on_vector_use(ref->getDecl(), "a ", " parameter");
      else if (const auto* var = dyn_cast<VarDecl>(ref->getDecl()); var && !var->isLocalVarDecl())
        on_vector_use(var, "a global ", "");
      else if (var && var->getType()->isReferenceType())
        on_vector_use(var, "a reference to a ", "");
    } else if (const auto* member = dyn_cast<MemberExpr>(stmt);
               member && isa<CXXThisExpr>(member->getBase()->IgnoreParenImpCasts())) {
      on_vector_use(member->getMemberDecl(), "a ", " member");
    } else if (isa<LambdaExpr>(stmt)) {
      return;  // a lambda body is another function
    }
    for (const Stmt* child : stmt->children()) visit(child);
  }
  std::map<const ValueDecl*, Origin> result() const {
    std::map<const ValueDecl*, Origin> out;
    for (const auto& [decl, entry] : entries_) {
      if (entry.unknown || !entry.origin) continue;
      out.emplace(decl, *entry.origin);
    }
    return out;
  }

 private:
  using Entry = ValueSource;
  void merge(const ValueDecl* decl, const Source& source) {
    Entry& entry = entries_[decl];
    if (source.unknown) entry.unknown = true;
    if (!source.origin) return;
    if (entry.origin && entry.origin->kind != source.origin->kind) entry.unknown = true;
    // A local assignment is the memory itself, not something every caller passes.
    if (!entry.origin || !source.origin->from_callers) entry.origin = source.origin;
  }
  void on_var(const VarDecl* var) {
    if (!var->isLocalVarDecl() || var->hasAttr<CUDASharedAttr>() || var->hasAttr<CUDADeviceAttr>() ||
        var->hasAttr<CUDAConstantAttr>())
      return;
    if (var->getType()->isConstantArrayType() && !var->isStaticLocal()) {
      merge(var, Source{false, Origin{MemKind::HostPageable, var->getLocation(), "a stack array"}});
    } else if (is_pageable_container(var->getType()) && !var->getType()->isReferenceType()) {
      merge(var, Source{false, Origin{MemKind::HostPageable, var->getLocation(), pageable_container(var->getType())}});
    } else if (var->getType()->isPointerType() && var->hasInit()) {
      merge(var, value_source(var->getInit()));
    }
  }
  // What a pointer is set to: an allocation, or a pointer into memory the
  // function already knows (p = images.data() + offset; q = p), which has
  // that memory's origin.
  Source value_source(const Expr* value) {
    Source source = classify_pointer_value(value, hints_);
    if (!source.unknown) return source;
    const ValueDecl* base = pointer_base(value);
    if (base == nullptr) return source;
    if (auto known = entries_.find(base); known != entries_.end())
      return known->second.unknown || !known->second.origin ? source : Source{false, known->second.origin};
    if (is_pageable_container(base->getType()))
      return Source{false, Origin{MemKind::HostPageable, base->getLocation(), pageable_container(base->getType())}};
    return source;
  }
  // A std::vector, std::array or std::string the function did not declare
  // (parameter, member, global, reference) still holds pageable memory.
  void on_vector_use(const ValueDecl* decl, const char* before, const char* after) {
    if (entries_.count(decl) || !is_pageable_container(decl->getType())) return;
    const std::string how = before + std::string(pageable_container(decl->getType())) + after;
    merge(decl, Source{false, Origin{MemKind::HostPageable, decl->getLocation(), how}});
  }
  void on_call(const CallExpr* call) {
    const std::string name = callee_name(call);
    const ValueDecl* target = call->getNumArgs() > 0 ? pointer_base(call->getArg(0)) : nullptr;
    if (auto kind = allocation_kind(name); kind && target) {
      // cudaMalloc(&p) allocates p; cudaMalloc(pp) with pp an out-parameter
      // (T** pp) allocates *pp, which is not tracked: pp itself stays host memory.
      const auto* address = dyn_cast<UnaryOperator>(call->getArg(0)->IgnoreParenCasts());
      if (address != nullptr && address->getOpcode() == UO_AddrOf)
        merge(target, Source{false, Origin{*kind, call->getBeginLoc(), name}});
    } else if ((name == "cudaHostRegister" || name == "cuMemHostRegister") && target) {
      // Registration pins what was pageable: it replaces the earlier origin.
      entries_[target].origin = Origin{MemKind::HostPinned, call->getBeginLoc(), name};
    } else if (!name.empty() && !is_cuda_runtime_api(name)) {
      // &p handed to unknown code may be assigned there; a function of the
      // TU whose summary says what it stores there assigns that.
      for (unsigned i = 0; i < call->getNumArgs(); ++i) {
        const Expr* arg = call->getArg(i);
        std::optional<Origin> stored = hints_ != nullptr ? hints_->stored(*call, i) : std::nullopt;
        const auto* unary = dyn_cast<UnaryOperator>(arg->IgnoreParenCasts());
        const ValueDecl* decl = nullptr;
        if (unary && unary->getOpcode() == UO_AddrOf) decl = pointer_base(unary->getSubExpr());
        else if (binds_pointer_reference(call, i)) decl = pointer_base(arg);
        if (decl == nullptr || !decl->getType()->isPointerType()) continue;
        if (stored) merge(decl, Source{false, stored});
        else entries_[decl].unknown = true;
      }
    }
  }
  const OriginHints* hints_;
  std::map<const ValueDecl*, Entry> entries_;
};

}  // namespace

std::map<const ValueDecl*, Origin> pointer_origins(const FunctionDecl& function, const OriginHints* hints) {
  OriginCollector collector(hints);
  collector.start(function);
  collector.visit(function.getBody());
  return collector.result();
}

}  // namespace gpudiag::lint
