// GD009 pageable-async-copy: cudaMemcpyAsync whose host side is pageable
// memory (malloc/new/std::vector/stack): the copy silently becomes
// synchronous and cannot overlap with compute.
#include "check.h"
#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

class PageableAsyncCopy : public Check {
 public:
  PageableAsyncCopy() : Check("GD009", "pageable-async-copy") {}
  void register_matchers(MatchFinder& finder) override { finder.addMatcher(user_functions(), this); }

  void run(const MatchFinder::MatchResult& result) override {
    const auto* function = result.Nodes.getNodeAs<FunctionDecl>("function");
    const SourceManager& sm = result.Context->getSourceManager();
    std::map<const ValueDecl*, Origin> origins;
    bool computed = false;
    for_each_stmt(function->getBody(), [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      auto copy = call ? as_copy(call) : std::nullopt;
      if (!copy || !copy->async) return;
      if (!computed) {
        origins = pointer_origins(*function);
        computed = true;
      }
      const Expr* sides[2] = {nullptr, nullptr};
      if (copy->kind == CopyKind::HostToDevice) sides[0] = copy->src;
      if (copy->kind == CopyKind::DeviceToHost) sides[0] = copy->dst;
      if (copy->kind == CopyKind::Default || copy->kind == CopyKind::HostToHost) {
        sides[0] = copy->src;
        sides[1] = copy->dst;
      }
      for (const Expr* side : sides) {
        const ValueDecl* decl = pointer_base(side);
        auto it = decl ? origins.find(decl) : origins.end();
        if (it == origins.end() || it->second.kind != MemKind::HostPageable) continue;
        Finding finding = make(sm, call->getBeginLoc(),
                               callee_name(call) + " copies " + (side == copy->dst ? "into" : "from") + " '" +
                                   decl->getNameAsString() + "', which is pageable host memory (" + it->second.how +
                                   "); the copy is staged through a driver buffer and does not overlap with GPU "
                                   "work. Allocate it with cudaMallocHost/cudaHostAlloc, or pin it with "
                                   "cudaHostRegister");
        note(finding, sm, it->second.where, "allocated as pageable memory here");
        report(std::move(finding), call->getBeginLoc(), sm);
        break;
      }
    });
  }
};

GPUDIAG_REGISTER_CHECK(PageableAsyncCopy, "GD009", "pageable-async-copy");

}  // namespace
}  // namespace gpudiag::lint
