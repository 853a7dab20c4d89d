// Correlated conditions: code that copies asynchronously only `if (async)`
// and synchronises under the same `if (async)` later. A path-insensitive
// dataflow sees a path that copied and skipped the sync, which cannot run;
// this tells the checks when the sync runs on every path the copy ran on.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Stmt.h>

namespace gpudiag::lint {

// Does `later` run whenever `earlier` ran (both in `function`), as far as the
// statements around `later` tell? Each if, switch, loop, `?:`, `&&` or `||`
// around `later` must also hold `earlier` in the same branch, or be an `if`
// testing a plain local or parameter (`if (v)`, `if (!v)`) that nothing
// writes inside the innermost statement holding both (nor a lambda captures
// by reference), with `earlier` inside an `if` taking the same branch on the
// same variable. A loop's body also counts when `earlier` is in the body of
// another loop with the same header as written (a launch loop over the
// devices, then a sync loop over them). A `do { } while (0)` body always
// runs. Anything else (a lambda, a condition that is not a plain variable)
// answers false.
bool runs_whenever(const clang::Stmt* later, const clang::Stmt* earlier, const clang::FunctionDecl& function,
                   clang::ASTContext& context);

}  // namespace gpudiag::lint
