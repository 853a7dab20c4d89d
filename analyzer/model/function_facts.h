// What several checks need to know about one function, computed once per
// function and shared by all of them: whether it calls CUDA at all, its CFG
// (GD003, GD004, GD007 run their dataflow on the same graph), and where its
// pointers' memory came from (GD001, GD003, GD004, GD009, GD012), with what
// the rest of the translation unit says of them. The cache also holds the
// summaries of the translation unit's functions, each computed once for
// every check: provenance.h (where pointers come from), sync_summaries.h
// (what a call waits for and frees), ownership.h (who frees what).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Mangle.h>
#include <clang/Analysis/CFG.h>

#include "cuda_model.h"
#include "sync_model.h"
#include "sync_summaries.h"
#include "ownership.h"
#include "provenance.h"

namespace gpudiag::lint {

class FunctionFactsCache;

class FunctionFacts {
 public:
  // `cache` gives the translation unit's provenance; without one, only the
  // function body is read.
  FunctionFacts(const clang::FunctionDecl& function, clang::ASTContext& context,
                FunctionFactsCache* cache = nullptr)
      : function_(function), context_(context), cache_(cache) {}
  FunctionFacts(const FunctionFacts&) = delete;
  FunctionFacts& operator=(const FunctionFacts&) = delete;

  const clang::FunctionDecl& function() const { return function_; }
  clang::ASTContext& context() const { return context_; }
  const clang::SourceManager& source_manager() const { return context_.getSourceManager(); }

  // Calls the CUDA runtime/driver API or launches a kernel.
  bool uses_cuda() const;
  // Built on first use; nullptr when the body cannot be built (e.g. dependent).
  const clang::CFG* cfg() const;
  const std::map<const clang::ValueDecl*, Origin>& origins() const;
  // The origin of the memory `pointer` points into, or nullptr; `decl_out`
  // receives the variable/field it is based on. s->buf / s.buf of any object
  // has the origin every assignment of the TU gives that field (decl_out is
  // then the field, which names no one object).
  const Origin* origin_of(const clang::Expr* pointer, const clang::ValueDecl** decl_out = nullptr) const;
  // The translation unit's summaries; nullptr without a cache.
  const Provenance* provenance() const;
  // Streams the function creates with cudaStreamNonBlocking (stream keys).
  const std::set<std::string>& nonblocking_streams() const;

 private:
  const clang::FunctionDecl& function_;
  clang::ASTContext& context_;
  FunctionFactsCache* cache_;
  mutable std::optional<bool> uses_cuda_;
  mutable std::optional<std::unique_ptr<clang::CFG>> cfg_;
  mutable std::optional<std::map<const clang::ValueDecl*, Origin>> own_origins_;
  mutable const std::map<const clang::ValueDecl*, Origin>* origins_ = nullptr;
  mutable std::optional<std::set<std::string>> nonblocking_;
  mutable std::map<const clang::FieldDecl*, Origin> container_fields_;  // origin_of's answers for other objects' containers
};

// The facts of the function the checks are looking at. Every check's
// function matcher fires for one function before the traversal moves on, so
// keeping only the latest function is enough (and keeps memory flat).
class FunctionFactsCache {
 public:
  const FunctionFacts& get(const clang::FunctionDecl& function, clang::ASTContext& context);
  // What calls of the translation unit's functions synchronise and free,
  // computed once per function for the whole translation unit.
  SyncSummaries& sync_summaries() { return sync_summaries_; }
  // Built on first use for the translation unit of `context`.
  const Provenance& provenance(clang::ASTContext& context);
  // Who frees what the translation unit allocates (GD007), built on first use.
  const Ownership& ownership(clang::ASTContext& context);
  // The name other units know `function` by (cross_unit.h), from one
  // mangler for the translation unit of `context`.
  std::string linkage_name(const clang::FunctionDecl& function, clang::ASTContext& context);

 private:
  std::unique_ptr<FunctionFacts> current_;
  SyncSummaries sync_summaries_;
  std::unique_ptr<Provenance> provenance_;
  std::unique_ptr<Ownership> ownership_;
  const clang::ASTContext* ownership_context_ = nullptr;
  std::unique_ptr<clang::MangleContext> mangler_;
  const clang::ASTContext* mangler_context_ = nullptr;
};

}  // namespace gpudiag::lint
