// Where pointers' memory comes from across the functions of one translation
// unit: what each function returns, stores through its out-parameters, is
// passed by every caller, and what struct fields hold; and what a function
// does on the host with the memory its parameters point to (dereferences it,
// writes it to a file). Computed once per translation unit, to a small fixed
// point, and shared by every check through FunctionFacts.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

#include "cuda_model.h"
#include "host_uses.h"

namespace gpudiag::lint {

// Something a function does to the memory one of its parameters points to,
// possibly in a function it hands the pointer on to.
struct ParamUse {
  const clang::Stmt* where = nullptr;           // the write or the dereference
  const clang::FunctionDecl* in = nullptr;      // the function it is in
};

struct ProvenanceFacts;  // what the source says and the current summaries (provenance.cpp)

class Provenance final : public OriginHints {
 public:
  explicit Provenance(clang::ASTContext& context);
  ~Provenance() override;
  Provenance(const Provenance&) = delete;
  Provenance& operator=(const Provenance&) = delete;

  clang::ASTContext& context() const { return context_; }

  std::optional<Origin> returned(const clang::CallExpr& call) const override;
  std::optional<Origin> stored(const clang::CallExpr& call, unsigned arg) const override;
  std::optional<Origin> parameter(const clang::ParmVarDecl& param) const override;
  std::optional<Origin> field(const clang::FieldDecl& field) const override;
  const Origin* field_origin(const clang::FieldDecl& field) const;

  // The pointer origins of a function of the TU with every summary applied;
  // nullptr for one it did not look at (the caller computes them itself).
  const std::map<const clang::ValueDecl*, Origin>* origins(const clang::FunctionDecl& function) const;

  // Does the function `call` calls write what its argument `arg` points to
  // to a file (fwrite, write, std::ostream::write, << to a file stream), or
  // dereference it on the host, itself or in a function it passes it on to?
  const ParamUse* writes_to_file(const clang::CallExpr& call, unsigned arg) const;
  const ParamUse* dereferences_on_host(const clang::CallExpr& call, unsigned arg) const;

 private:
  struct Effects {
    std::optional<ParamUse> file_write;
    std::optional<ParamUse> host_dereference;
  };
  const Effects* effects(const clang::FunctionDecl* callee, unsigned param) const;
  const Effects& effects_of(const clang::ParmVarDecl* param) const;
  void summarise();

  clang::ASTContext& context_;
  std::unique_ptr<ProvenanceFacts> facts_;
  // Filled by effects_of on demand; nullptr while one is being computed (recursion).
  mutable std::map<const clang::ParmVarDecl*, std::unique_ptr<Effects>> effects_;
};

}  // namespace gpudiag::lint
