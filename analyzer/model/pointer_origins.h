// Where the memory a host pointer holds came from, within one function body:
// allocations, stack arrays and std::vectors the body declares, pointers set
// from memory it already knows, and (with OriginHints) what the translation
// unit's other functions and struct fields give it.
#pragma once

#include <map>
#include <optional>

#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>

#include "cuda_model.h"

namespace gpudiag::lint {

// What a value assigned to a pointer makes of it: an origin, `unknown` (it
// poisons the pointer), or neither (null: no information).
struct ValueSource {
  bool unknown = false;
  std::optional<Origin> origin;
};
// malloc/new, and with hints calls of the TU's functions and struct fields;
// variables are the caller's to look up.
ValueSource classify_pointer_value(const clang::Expr* value, const OriginHints* hints = nullptr);

// "std::vector", "std::array" or "std::string" when `type` (or a reference to
// it) is one whose elements are pageable host memory: a vector or string
// with the default allocator, any array; nullptr otherwise.
const char* pageable_container(clang::QualType type);

// Origins of the pointers a function body allocates or declares; a pointer
// with two different origins, or assigned from anything else, is left out.
std::map<const clang::ValueDecl*, Origin> pointer_origins(const clang::FunctionDecl& function,
                                                          const OriginHints* hints = nullptr);

}  // namespace gpudiag::lint
