// GD012 device-checkpoint: device memory written to a file (fwrite, write,
// std::ostream::write) instead of a host copy of it.
#include <clang/AST/ExprCXX.h>

#include "cuda_model.h"
#include "function_facts.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

class DeviceCheckpoint : public FunctionCheck {
 public:
  DeviceCheckpoint() : FunctionCheck("GD012", "device-checkpoint") {}

 protected:
  void check(const FunctionFacts& facts) override {
    const SourceManager& sm = facts.source_manager();
    for_each_stmt(facts.function().getBody(), [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr) return;
      const Expr* data = written_buffer(call);
      if (data == nullptr) return;
      const ValueDecl* decl = nullptr;
      const Origin* origin = facts.origin_of(data, &decl);
      if (origin == nullptr || origin->kind != MemKind::Device) return;
      Finding finding = make(sm, call->getBeginLoc(),
                             "device memory '" + decl->getNameAsString() + "' is written to a file; the host cannot "
                             "read device pointers, so the checkpoint holds garbage (or the program faults). Copy "
                             "it to a host buffer with cudaMemcpy(..., cudaMemcpyDeviceToHost) and write that");
      note(finding, sm, origin->where, "allocated as device memory (" + origin->how + ") here");
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
