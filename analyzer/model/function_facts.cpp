#include "function_facts.h"

#include "cross_unit.h"
#include "flow.h"
#include "pointer_origins.h"

namespace gpudiag::lint {

bool FunctionFacts::uses_cuda() const {
  if (!uses_cuda_) uses_cuda_ = lint::uses_cuda(function_.getBody());
  return *uses_cuda_;
}

const clang::CFG* FunctionFacts::cfg() const {
  if (!cfg_) cfg_ = build_cfg(function_, context_);
  return cfg_->get();
}

const Provenance* FunctionFacts::provenance() const {
  return cache_ != nullptr ? &cache_->provenance(context_) : nullptr;
}

const std::map<const clang::ValueDecl*, Origin>& FunctionFacts::origins() const {
  if (origins_ != nullptr) return *origins_;
  const Provenance* summaries = provenance();
  origins_ = summaries != nullptr ? summaries->origins(function_) : nullptr;
  if (origins_ == nullptr) origins_ = &own_origins_.emplace(pointer_origins(function_, summaries));
  return *origins_;
}

const Origin* FunctionFacts::origin_of(const clang::Expr* pointer, const clang::ValueDecl** decl_out) const {
  const clang::ValueDecl* decl = pointer_base(pointer);
  if (decl_out != nullptr) *decl_out = decl;
  if (decl != nullptr) {
    const auto& known = origins();
    if (auto it = known.find(decl); it != known.end()) return &it->second;
  }
  if (decl != nullptr && !llvm::isa<clang::FieldDecl>(decl)) return nullptr;
  const auto* field = llvm::dyn_cast_or_null<clang::FieldDecl>(pointer_base(pointer, true));
  // batch.tokens.data() of any object: the field's type says where its elements are.
  if (const char* container = field != nullptr ? pageable_container(field->getType()) : nullptr) {
    if (decl_out != nullptr) *decl_out = field;
    auto [it, fresh] = container_fields_.try_emplace(field);
    if (fresh) it->second = Origin{MemKind::HostPageable, field->getLocation(), std::string("a ") + container + " member"};
    return &it->second;
  }
  const Provenance* summaries = provenance();
  const Origin* origin = field != nullptr && summaries != nullptr ? summaries->field_origin(*field) : nullptr;
  if (origin != nullptr && decl_out != nullptr) *decl_out = field;
  return origin;
}

const std::set<std::string>& FunctionFacts::nonblocking_streams() const {
  if (!nonblocking_) nonblocking_ = lint::nonblocking_streams(function_.getBody());
  return *nonblocking_;
}

const FunctionFacts& FunctionFactsCache::get(const clang::FunctionDecl& function, clang::ASTContext& context) {
  if (!current_ || &current_->function() != &function || &current_->context() != &context)
    current_ = std::make_unique<FunctionFacts>(function, context, this);
  return *current_;
}

const Provenance& FunctionFactsCache::provenance(clang::ASTContext& context) {
  if (!provenance_ || &provenance_->context() != &context) provenance_ = std::make_unique<Provenance>(context);
  return *provenance_;
}

const Ownership& FunctionFactsCache::ownership(clang::ASTContext& context) {
  if (!ownership_ || ownership_context_ != &context) {
    ownership_ = std::make_unique<Ownership>(context);
    ownership_context_ = &context;
  }
  return *ownership_;
}

std::string FunctionFactsCache::linkage_name(const clang::FunctionDecl& function, clang::ASTContext& context) {
  if (!mangler_ || mangler_context_ != &context) {
    mangler_.reset(context.createMangleContext());
    mangler_context_ = &context;
  }
  return gpudiag::lint::linkage_name(function, *mangler_);
}

}  // namespace gpudiag::lint
