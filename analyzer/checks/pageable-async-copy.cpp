// GD009 pageable-async-copy: cudaMemcpyAsync whose host side is pageable
// memory (malloc/new/std::vector/stack): the copy silently becomes
// synchronous and cannot overlap with compute.
#include "check.h"
#include "cuda_model.h"
#include "function_facts.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

class PageableAsyncCopy : public FunctionCheck {
 protected:
  void check(const FunctionFacts& facts) override {
    const SourceManager& sm = facts.source_manager();
    for_each_stmt(facts.function().getBody(), [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      auto copy = call ? as_copy(call) : std::nullopt;
      if (!copy || !copy->async) return;
      const Expr* sides[2] = {nullptr, nullptr};
      if (copy->kind == CopyKind::HostToDevice) sides[0] = copy->src;
      if (copy->kind == CopyKind::DeviceToHost) sides[0] = copy->dst;
      if (copy->kind == CopyKind::Default || copy->kind == CopyKind::HostToHost) {
        sides[0] = copy->src;
        sides[1] = copy->dst;
      }
      for (const Expr* side : sides) {
        const ValueDecl* decl = nullptr;
        const Origin* origin = facts.origin_of(side, &decl);
        if (origin == nullptr || origin->kind != MemKind::HostPageable) continue;
        Finding finding = make(sm, call->getBeginLoc(),
                               callee_name(call) + " copies " + (side == copy->dst ? "into" : "from") + " '" +
                                   decl->getNameAsString() + "', which is pageable host memory (" + origin->how +
                                   "); the copy is staged through a driver buffer and does not overlap with GPU "
                                   "work. Allocate it with cudaMallocHost/cudaHostAlloc, or pin it with "
                                   "cudaHostRegister");
        note(finding, sm, origin->where, "allocated as pageable memory here");
        report(std::move(finding), call->getBeginLoc(), sm);
        break;
      }
    });
  }
};

GPUDIAG_REGISTER_CHECK(PageableAsyncCopy, "pageable-async-copy");

}  // namespace
}  // namespace gpudiag::lint
