// What the source of one translation unit says about pointers, collected
// once for Provenance (provenance.h): every store into a function's result,
// a T** or T*& parameter or a pointer field, every call site by callee, and
// the functions named other than by a call. Provenance then summarises these
// facts to a fixed point.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>

#include "cuda_model.h"

namespace gpudiag::lint {

struct ProvenanceFacts {
  // A value some statement stores into a summarised slot: a field, what a T**
  // parameter points to, or a function's result. Exactly one of `value`,
  // `allocation` and `through` is set; none means unknown.
  struct Store {
    const clang::FunctionDecl* in = nullptr;   // whose variables `value` may name; nullptr in a lambda or initialiser
    const clang::Expr* value = nullptr;
    std::optional<Origin> allocation = std::nullopt;  // cudaMalloc(&s->buf) and the like
    const clang::CallExpr* through = nullptr;  // a call that stores through its argument `arg`
    unsigned arg = 0;
  };
  struct CallSite {
    const clang::FunctionDecl* caller;
    const clang::CallExpr* call;
  };

  // What the source says, collected once.
  std::vector<const clang::FunctionDecl*> functions;  // definitions in user code, not dependent
  std::map<const clang::FunctionDecl*, std::vector<CallSite>> calls;  // by canonical callee
  std::set<const clang::FunctionDecl*> escaped;       // canonical: named other than by a call seen in a function
  std::map<const clang::FunctionDecl*, std::vector<Store>> returns;  // by canonical function
  std::map<const clang::ParmVarDecl*, std::vector<Store>> out_stores;
  std::map<const clang::FieldDecl*, std::vector<Store>> field_stores;

  // The summaries of the current round.
  struct Summaries {
    std::map<const clang::FunctionDecl*, Origin> returned;  // by canonical function
    std::map<const clang::ParmVarDecl*, Origin> out;        // what *p (T**) or p (T*&) holds on return
    std::map<const clang::ParmVarDecl*, Origin> parameters;
    std::map<const clang::FieldDecl*, Origin> fields;
  } summaries;
  std::map<const clang::FunctionDecl*, std::map<const clang::ValueDecl*, Origin>> origins;  // by definition
};

// Fills the source facts of `facts` (not its summaries) from the user's code of `context`.
void collect_provenance_facts(clang::ASTContext& context, ProvenanceFacts& facts);

// The shapes both the collection and the summaries read.
const clang::FunctionDecl* canonical(const clang::FunctionDecl* function);
// T** out: a parameter through which the function hands memory back.
bool is_out_pointer(clang::QualType type);
// T*&: likewise, by reference.
bool is_pointer_reference(clang::QualType type);
// The pointer field `expr` names (s.buf, s->buf), else nullptr.
const clang::FieldDecl* pointer_field(const clang::Expr* expr);
// Parameters are inferred from the callers only where every call is a plain
// call in the TU: not kernels (launched, device code), constructors,
// operators or virtual methods (called in ways the TU does not spell).
bool may_infer_parameters(const clang::FunctionDecl* function);

}  // namespace gpudiag::lint
