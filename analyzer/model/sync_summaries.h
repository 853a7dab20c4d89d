// What a call of a function defined in the translation unit does to
// synchronisation and to the memory its arguments point to, read once from
// the function's body: "waits for the stream in parameter 1", "waits for the
// device", "frees parameter 0 with cudaFreeAsync on the stream in parameter
// 1". GD003 and GD004 apply these at each call as if the body were inlined.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

#include "sync_model.h"

namespace gpudiag::lint {

// A stream or event the callee names: one of its parameters, or a handle
// that means the same in every function (a global, a special stream).
struct HandleRef {
  int param = -1;   // >= 0: the caller's argument
  std::string key;  // otherwise: the callee's own key
};

struct SyncEffect {
  SyncKind kind = SyncKind::None;
  HandleRef handle;  // Stream and Event only
};

struct FreeEffect {
  unsigned param = 0;         // the parameter whose memory is freed
  std::string how;            // "cudaFree", "cudaFreeAsync", "free", "delete", ...
  std::optional<HandleRef> stream;  // for stream-ordered frees
};

// What a call does to the memory a pointer parameter points to, as the
// caller that allocated it sees it (GD007): frees it on every path, keeps it
// beyond the call (stores it in a member, a global, a container or an
// out-parameter, returns it, copies it into another pointer, frees it under
// a condition, hands it to code without a summary), or only uses it (reads,
// writes, copies, launches, helpers that only use it). The caller still owns
// what it hands only to users.
enum class ParamFate { Uses, Frees, Keeps };

struct FunctionSummary {
  // What the host has waited for when a call returns, if anything. Several
  // different waits in one body, or a wait on something that means nothing
  // to the caller (a member, an expression), count as a device sync: a
  // missed finding is better than a false one.
  std::optional<SyncEffect> sync;
  std::vector<FreeEffect> frees;
  // One per parameter; a parameter that is no pointer reads Keeps.
  std::vector<ParamFate> params;
};

class SyncSummaries {
 public:
  // nullptr for functions without a body, CUDA API functions and functions
  // in system headers.
  const FunctionSummary* of(const clang::FunctionDecl* function, clang::ASTContext& context);
  // Keys of the globals and members that some function of the translation
  // unit creates as non-blocking streams (an init function makes the stream
  // another function copies on).
  const std::set<std::string>& shared_nonblocking_streams(clang::ASTContext& context);
  // The sync of a call of a TU function, in the caller's terms.
  SyncCall sync_of(const clang::CallExpr* call, clang::ASTContext& context);
  // What the callee of `call` does to the memory passed as `argument` (one of
  // the call's arguments, as written): Keeps when the callee has no summary
  // (no body in this translation unit) or the argument has no parameter.
  ParamFate argument_fate(const clang::CallExpr* call, const clang::Expr* argument, clang::ASTContext& context);
  // sync_of as as_sync asks for it; it refers to this object.
  HelperSyncLookup helper_sync(clang::ASTContext& context) {
    return [this, &context](const clang::CallExpr* call) { return sync_of(call, context); };
  }

 private:
  std::optional<std::set<std::string>> shared_nonblocking_;
  std::map<const clang::FunctionDecl*, FunctionSummary> done_;
  std::set<const clang::FunctionDecl*> in_progress_;  // recursion
};

// Which parameter of the callee `argument` (one of the call's arguments, as
// written) is passed to; none for a variadic one or an indirect call.
std::optional<unsigned> parameter_of(const clang::CallExpr* call, const clang::Expr* argument);
// The caller's argument a HandleRef names, or nullptr for a callee-own handle.
const clang::Expr* argument_for(const clang::CallExpr* call, const HandleRef& handle);
// The caller's key for the handle.
std::string key_for(const clang::CallExpr* call, const HandleRef& handle, const clang::ASTContext& context);

}  // namespace gpudiag::lint
