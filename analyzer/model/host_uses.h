// What host code does with memory through a pointer: dereferences it
// (p[i], *p, memcpy) or writes it to a file (fwrite, write, << to a file
// stream). GD001 and GD012 judge these against where the memory came from.
#pragma once

#include <functional>
#include <string>

#include <clang/AST/Expr.h>
#include <clang/AST/Type.h>

#include "cuda_model.h"

namespace gpudiag::lint {

// std::ofstream / std::fstream, or a class derived from one.
bool is_file_stream(clang::QualType type);
// The value `file << value` writes, where `file` (through a chain of <<) is
// a file stream; else nullptr.
const clang::Expr* file_stream_insert(const clang::CallExpr* call);
// The buffer argument of fwrite/write/pwrite/std::ostream::write, else nullptr.
const clang::Expr* file_write_buffer(const clang::CallExpr* call);

// Calls visit(access, pointer) for each place under `body` that reads or
// writes memory through a pointer on the host: p[i], *p, and the pointer
// arguments of memcpy/memset/memmove/memcmp/strcpy/strlen. &p[i] and &*p
// only compute addresses; lambda bodies (other functions) and unevaluated
// operands are left out.
void for_each_host_dereference(const clang::Stmt* body,
                               const std::function<void(const clang::Stmt*, const clang::Expr*)>& visit);

// A name for messages: the variable or field the pointer is based on.
std::string pointer_name(const clang::Expr* pointer);

}  // namespace gpudiag::lint
