// GD012 device-checkpoint: device memory written to a file (fwrite, write,
// std::ostream::write) instead of a host copy of it.
#include <clang/AST/ExprCXX.h>

#include "check.h"
#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

class DeviceCheckpoint : public Check {
 public:
  DeviceCheckpoint() : Check("GD012", "device-checkpoint") {}
  void register_matchers(MatchFinder& finder) override { finder.addMatcher(user_functions(), this); }

  void run(const MatchFinder::MatchResult& result) override {
    const auto* function = result.Nodes.getNodeAs<FunctionDecl>("function");
    const SourceManager& sm = result.Context->getSourceManager();
    std::optional<std::map<const ValueDecl*, Origin>> origins;
    for_each_stmt(function->getBody(), [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr) return;
      const Expr* data = written_buffer(call);
      if (data == nullptr) return;
      if (!origins) origins = pointer_origins(*function);
      const ValueDecl* decl = pointer_base(data);
      auto it = decl ? origins->find(decl) : origins->end();
      if (it == origins->end() || it->second.kind != MemKind::Device) return;
      Finding finding = make(sm, call->getBeginLoc(),
                             "device memory '" + decl->getNameAsString() + "' is written to a file; the host cannot "
                             "read device pointers, so the checkpoint holds garbage (or the program faults). Copy "
                             "it to a host buffer with cudaMemcpy(..., cudaMemcpyDeviceToHost) and write that");
      note(finding, sm, it->second.where, "allocated as device memory (" + it->second.how + ") here");
      report(std::move(finding), call->getBeginLoc(), sm);
    });
  }

 private:
  // The buffer argument of fwrite/write/std::ostream::write, else nullptr.
  static const Expr* written_buffer(const CallExpr* call) {
    const std::string name = callee_name(call);
    if (const auto* member = dyn_cast<CXXMemberCallExpr>(call)) {
      const CXXRecordDecl* record = member->getRecordDecl();
      if (name == "write" && record && record->isInStdNamespace() && member->getNumArgs() >= 1)
        return member->getArg(0);
      return nullptr;
    }
    if (name == "fwrite" && call->getNumArgs() >= 1) return call->getArg(0);
    if ((name == "write" || name == "pwrite") && call->getNumArgs() >= 2) return call->getArg(1);
    return nullptr;
  }
};

GPUDIAG_REGISTER_CHECK(DeviceCheckpoint, "GD012", "device-checkpoint");

}  // namespace
}  // namespace gpudiag::lint
