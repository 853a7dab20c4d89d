// Who owns CUDA allocations across the functions of one translation unit:
// which records have a destroy function (a function handed the object, or a
// member function/destructor of it, that frees some of its pointer fields),
// which fields are freed or handed on anywhere, and which functions return
// memory they freshly allocated. Computed once per translation unit and
// shared by the checks that need it (GD007); a check builds it lazily and
// drops it in onStartOfTranslationUnit.
#pragma once

#include <map>
#include <set>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>

namespace gpudiag::lint {

class Ownership {
 public:
  // Walks the user's declarations (the traversal scope) of `context`.
  explicit Ownership(clang::ASTContext& context);

  // Functions that free fields of a `record` object they are given (a
  // parameter R*/R&/R, or `this` in a member function or the destructor);
  // empty when the translation unit defines none.
  const std::vector<const clang::FunctionDecl*>& destroyers(const clang::RecordDecl* record) const;
  // Is the field freed anywhere, or handed to code that may free it (passed
  // to a non-CUDA call, copied into another pointer, returned, swapped)?
  bool released_anywhere(const clang::FieldDecl* field) const;
  // Does every return of the function give either null or a local pointer
  // the function itself allocated with a CUDA allocator (and did not free)?
  bool returns_allocation(const clang::FunctionDecl* function) const;

 private:
  friend class OwnershipCollector;
  std::map<const clang::RecordDecl*, std::vector<const clang::FunctionDecl*>> destroyers_;
  std::set<const clang::FieldDecl*> released_;
  std::set<const clang::FunctionDecl*> returns_allocation_;
};

// The field a pointer expression names in some object: s->buf, s.buf,
// &s->buf, (void**)&this->buf; nullptr otherwise (elements, locals).
const clang::FieldDecl* named_field(const clang::Expr* expr);

}  // namespace gpudiag::lint
