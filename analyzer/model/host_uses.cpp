#include "host_uses.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>

namespace gpudiag::lint {
using namespace clang;

bool is_file_stream(QualType type) {
  const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || !record->hasDefinition()) return false;
  if (record->isInStdNamespace() && record->getDeclName().isIdentifier() &&
      (record->getName() == "basic_ofstream" || record->getName() == "basic_fstream"))
    return true;
  // A class of the user's derived from one (class Checkpoint : public std::ofstream).
  for (const CXXBaseSpecifier& base : record->bases())
    if (is_file_stream(base.getType())) return true;
  return false;
}

// The value `file << value` writes, where `file` (through a chain of <<) is
// a file stream; else nullptr.
const Expr* file_stream_insert(const CallExpr* call) {
  const auto* op = dyn_cast<CXXOperatorCallExpr>(call);
  if (op == nullptr || op->getOperator() != OO_LessLess || op->getNumArgs() != 2) return nullptr;
  const Expr* stream = op->getArg(0)->IgnoreParenImpCasts();
  while (const auto* inner = dyn_cast<CXXOperatorCallExpr>(stream)) {
    if (inner->getOperator() != OO_LessLess || inner->getNumArgs() != 2) break;
    stream = inner->getArg(0)->IgnoreParenImpCasts();
  }
  return is_file_stream(stream->getType()) ? op->getArg(1) : nullptr;
}

const Expr* file_write_buffer(const CallExpr* call) {
  const std::string name = callee_name(call);
  if (const auto* member = dyn_cast<CXXMemberCallExpr>(call)) {
    const CXXRecordDecl* record = member->getRecordDecl();
    if (name == "write" && record && record->isInStdNamespace() && member->getNumArgs() >= 1) return member->getArg(0);
    return nullptr;
  }
  if (name == "fwrite" && call->getNumArgs() >= 1) return call->getArg(0);
  if ((name == "write" || name == "pwrite") && call->getNumArgs() >= 2) return call->getArg(1);
  return nullptr;
}

namespace {
bool is_memory_function(std::string_view name) {
  return name == "memcpy" || name == "memset" || name == "memmove" || name == "strcpy" || name == "strlen" ||
         name == "memcmp";
}

void walk_dereferences(const Stmt* stmt, bool address_only,
                       const std::function<void(const Stmt*, const Expr*)>& visit) {
  if (stmt == nullptr || isa<LambdaExpr, UnaryExprOrTypeTraitExpr>(stmt)) return;
  if (!address_only) {
    if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(stmt)) {
      visit(stmt, subscript->getBase());
    } else if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->getOpcode() == UO_Deref) {
      visit(stmt, unary->getSubExpr());
    } else if (const auto* call = dyn_cast<CallExpr>(stmt); call && is_memory_function(callee_name(call))) {
      for (const Expr* arg : call->arguments())
        if (arg->IgnoreParenImpCasts()->getType()->isPointerType()) visit(call, arg);
    }
  }
  // &p[i] and &*p compute an address: the access itself is not made, its operands are evaluated.
  const auto* unary = dyn_cast<UnaryOperator>(stmt);
  const Stmt* address_of = unary && unary->getOpcode() == UO_AddrOf ? unary->getSubExpr()->IgnoreParens() : nullptr;
  for (const Stmt* child : stmt->children()) {
    const Stmt* bare = child;
    if (const auto* expr = dyn_cast_or_null<Expr>(child)) bare = expr->IgnoreParens();
    walk_dereferences(bare, bare != nullptr && bare == address_of, visit);
  }
}
}  // namespace

void for_each_host_dereference(const Stmt* body, const std::function<void(const Stmt*, const Expr*)>& visit) {
  walk_dereferences(body, false, visit);
}

std::string pointer_name(const Expr* pointer) {
  const ValueDecl* decl = pointer_base(pointer, true);
  return decl != nullptr ? decl->getNameAsString() : "the pointer";
}

}  // namespace gpudiag::lint
