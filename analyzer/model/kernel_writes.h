// Which memory a kernel launch writes: the pointer arguments whose
// parameter the kernel's body stores through (p[i] = v, *p += v, p->x++,
// atomicAdd(&p[i], v), a device function handed p that stores through it),
// read from the body clang parses for the device side of the file. GD003
// holds the host to waiting for such a launch before it reads that memory.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>

namespace gpudiag::lint {

enum class ParamWrite {
  No,       // the body never stores through it, or its pointee is const
  Yes,      // the body stores through it (or hands it to code that may)
  Assumed,  // no body in this file: a pointer to non-const counts as written
};

class KernelWrites {
 public:
  // Does `function` (a kernel or device function) store through its
  // parameter `param`? Anything the body does with it that this does not
  // follow (a pointer stored in a struct or a global, inline assembly, a
  // call through a pointer, a callee too deep) counts as a store.
  ParamWrite writes(const clang::FunctionDecl* function, unsigned param);

 private:
  bool stores_through(const clang::FunctionDecl& definition, const clang::ParmVarDecl& param, int depth);
  bool call_stores(const clang::CallExpr& call, const std::set<const clang::ValueDecl*>& aliases, int depth);

  std::map<std::pair<const clang::FunctionDecl*, unsigned>, bool> done_;
  std::set<std::pair<const clang::FunctionDecl*, unsigned>> in_progress_;  // recursion: counts as no store
  bool cut_ = false;  // the current answer met a call in progress
};

// What a launch passes to each kernel parameter, and the kernel: the
// arguments of k<<<...>>>(a, b) and of cudaLaunchKernelEx(&config, k, a, b),
// or the `void* args[] = {&a, &b}` array of cudaLaunchKernel,
// cudaLaunchCooperativeKernel and cudaLaunchKernelExC (each element `&a`
// stands for a). `stream` is the launch's stream (nullptr: the default
// stream); a cudaLaunchKernelEx's is its config's.
struct LaunchArgs {
  const clang::FunctionDecl* kernel = nullptr;  // nullptr when launched through a pointer
  std::vector<const clang::Expr*> args;
  const clang::Expr* stream = nullptr;
};
// A launch, or nullopt for any other call (and for a cudaLaunchKernel whose
// argument array is not a local array initialised in place, or a
// cudaLaunchKernelEx whose config's stream is not known).
std::optional<LaunchArgs> launch_args(const clang::CallExpr* call);

}  // namespace gpudiag::lint
