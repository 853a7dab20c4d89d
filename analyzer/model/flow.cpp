#include "flow.h"

#include <clang/AST/Decl.h>

namespace gpudiag::lint {

std::unique_ptr<clang::CFG> build_cfg(const clang::FunctionDecl& function, clang::ASTContext& context) {
  if (!function.hasBody() || function.isDependentContext()) return nullptr;
  clang::CFG::BuildOptions options;
  options.setAllAlwaysAdd();
  options.AddImplicitDtors = false;
  options.AddTemporaryDtors = false;
  return clang::CFG::buildCFG(&function, function.getBody(), &context, options);
}

}  // namespace gpudiag::lint
