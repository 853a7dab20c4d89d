// GD001 device-mismatch: host memory handed to a kernel or used as the
// device side of a copy, device memory dereferenced or handed to host-only
// code (also to a function of the file that dereferences its parameter on
// the host), and copy kinds that contradict where the pointers came from.
// Origins come across functions (model/provenance.h).
#include <set>

#include <clang/AST/ExprCXX.h>

#include "check.h"
#include "cuda_model.h"
#include "function_facts.h"
#include "provenance.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

bool is_host(MemKind kind) { return kind == MemKind::HostPageable || kind == MemKind::HostPinned; }

class DeviceMismatch : public FunctionCheck {
 protected:
  void check(const FunctionFacts& facts) override {
    facts_ = &facts;
    const Stmt* body = facts.function().getBody();
    for_each_host_dereference(body, [this](const Stmt* access, const Expr* pointer) { host_access(access, pointer); });
    for_each_stmt(body, [this](const Stmt* stmt) { visit(stmt); });
  }

 private:
  const SourceManager& sm() const { return facts_->source_manager(); }

  const Origin* origin_of(const Expr* pointer, const ValueDecl** decl_out = nullptr) const {
    return facts_->origin_of(pointer, decl_out);
  }

  void emit(const Stmt* where, const std::string& message, const Origin& origin) {
    Finding finding = make(sm(), where->getBeginLoc(), message);
    note(finding, sm(), origin.where, "allocated as " + std::string(describe(origin.kind)) + " (" + origin.how + ") here");
    report(std::move(finding), where->getBeginLoc(), sm());
  }

  void check_launch(const CUDAKernelCallExpr* launch) {
    for (const Expr* arg : launch->arguments()) {
      if (!arg->getType()->isPointerType()) continue;
      const ValueDecl* decl = nullptr;
      const Origin* origin = origin_of(arg, &decl);
      if (origin != nullptr && origin->kind == MemKind::HostPageable) {
        emit(arg, "kernel '" + kernel_name(launch) + "' receives '" + decl->getNameAsString() +
                      "', which points to pageable host memory; the GPU cannot read it (illegal memory access). "
                      "Copy it to device memory (cudaMalloc + cudaMemcpy) and pass the device pointer",
             *origin);
        continue;
      }
      // &local: the address of a host stack variable.
      const auto* unary = dyn_cast<UnaryOperator>(arg->IgnoreParenCasts());
      const auto* ref = unary && unary->getOpcode() == UO_AddrOf ? dyn_cast<DeclRefExpr>(unary->getSubExpr()) : nullptr;
      const auto* var = ref ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
      if (var && var->isLocalVarDecl() && !var->hasAttr<CUDASharedAttr>()) {
        Finding finding = make(sm(), arg->getBeginLoc(),
                               "kernel '" + kernel_name(launch) + "' receives the address of host variable '" +
                                   var->getNameAsString() + "'; the GPU cannot access the host stack. Allocate "
                                   "it on the device (cudaMalloc) or pass it by value");
        note(finding, sm(), var->getLocation(), "declared on the host stack here");
        report(std::move(finding), arg->getBeginLoc(), sm());
      }
    }
  }

  void check_copy(const CallExpr* call, const CopyCall& copy) {
    const bool dst_device = copy.kind == CopyKind::HostToDevice || copy.kind == CopyKind::DeviceToDevice;
    const bool src_device = copy.kind == CopyKind::DeviceToHost || copy.kind == CopyKind::DeviceToDevice;
    const bool dst_host = copy.kind == CopyKind::DeviceToHost || copy.kind == CopyKind::HostToHost;
    const bool src_host = copy.kind == CopyKind::HostToDevice || copy.kind == CopyKind::HostToHost;
    const std::string what = callee_name(call);
    auto side = [&](const Expr* pointer, bool want_device, bool want_host, const char* role) {
      const ValueDecl* decl = nullptr;
      const Origin* origin = origin_of(pointer, &decl);
      if (origin == nullptr || origin->kind == MemKind::Managed) return;
      if (want_device && is_host(origin->kind))
        emit(pointer, "the " + std::string(role) + " of this " + what + " must be device memory for its copy kind, but '" +
                          decl->getNameAsString() + "' is " + std::string(describe(origin->kind)) +
                          "; swap the pointers or fix the cudaMemcpyKind (cudaMemcpyDefault lets the runtime decide)",
             *origin);
      if (want_host && origin->kind == MemKind::Device)
        emit(pointer, "the " + std::string(role) + " of this " + what + " must be host memory for its copy kind, but '" +
                          decl->getNameAsString() + "' is device memory; swap the pointers or fix the cudaMemcpyKind",
             *origin);
    };
    side(copy.dst, dst_device, dst_host, "destination");
    side(copy.src, src_device, src_host, "source");
  }

  // Memory every caller passes is reported at the callers (passed_to_host_code).
  void host_access(const Stmt* where, const Expr* pointer) {
    const ValueDecl* decl = nullptr;
    const Origin* origin = origin_of(pointer, &decl);
    if (origin == nullptr || origin->kind != MemKind::Device || origin->from_callers ||
        !reported_.insert(where).second)
      return;
    emit(where, "device memory '" + decl->getNameAsString() + "' is accessed on the host; the host cannot "
                "dereference device pointers (segfault or garbage). Copy it to the host first (cudaMemcpy "
                "cudaMemcpyDeviceToHost), or allocate it with cudaMallocManaged",
         *origin);
  }

  // Device memory handed to a function of the file that reads or writes
  // through that parameter on the host (itself or further down).
  void passed_to_host_code(const CallExpr* call) {
    const Provenance* provenance = facts_->provenance();
    if (provenance == nullptr) return;
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const Expr* arg = call->getArg(i);
      if (!arg->IgnoreParenImpCasts()->getType()->isPointerType()) continue;
      const Origin* origin = origin_of(arg);
      if (origin == nullptr || origin->kind != MemKind::Device || origin->from_callers) continue;
      const ParamUse* use = provenance->dereferences_on_host(*call, i);
      if (use == nullptr) continue;
      const std::string callee = call->getDirectCallee()->getNameAsString();
      Finding finding = make(sm(), arg->getBeginLoc(),
                             "device memory '" + pointer_name(arg) + "' is passed to '" + callee +
                                 "', which reads or writes it on the host; the host cannot dereference device "
                                 "pointers (segfault or garbage). Copy it to the host first (cudaMemcpy "
                                 "cudaMemcpyDeviceToHost), or allocate it with cudaMallocManaged");
      note(finding, sm(), use->where->getBeginLoc(),
           "dereferenced on the host here, in '" + use->in->getNameAsString() + "'");
      note(finding, sm(), origin->where, "allocated as device memory (" + origin->how + ") here");
      report(std::move(finding), arg->getBeginLoc(), sm());
    }
  }

  void visit(const Stmt* stmt) {
    if (const auto* launch = dyn_cast<CUDAKernelCallExpr>(stmt)) return check_launch(launch);
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    if (auto copy = as_copy(call)) return check_copy(call, *copy);
    passed_to_host_code(call);
  }

  const FunctionFacts* facts_ = nullptr;
  std::set<const Stmt*> reported_;
};

GPUDIAG_REGISTER_CHECK(DeviceMismatch, "device-mismatch");

}  // namespace
}  // namespace gpudiag::lint
