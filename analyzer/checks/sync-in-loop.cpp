// GD010 sync-in-loop: a device or stream synchronisation or a blocking
// device-to-host cudaMemcpy on every iteration of a loop that queues GPU
// work: the host waits for the GPU each step and the pipeline drains.
// gdrt's device and stream syncs (gdrt::synchronize(device),
// Stream::synchronize()) are the same waits, and any gdrt op or module call
// in the loop queues work.
// A sync under an `if` inside the loop (every N steps) is the fix, not a bug,
// and so is a sync the loop's own host code needs: it reads a pinned buffer
// an async device-to-host copy in the loop fills, or refills one an async
// host-to-device copy reads (chunked, double-buffered transfers).
#include <set>
#include <utility>
#include <vector>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

#include "check.h"
#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

class SyncInLoop : public Check {
 public:
  void register_matchers(MatchFinder& finder) override {
    finder.addMatcher(
        callExpr(unless(isExpansionInSystemHeader()),
                 // cudaEventSynchronize is left out: waiting on an event of an
                 // earlier step is how pipelines bound the work in flight.
                 callee(functionDecl(hasAnyName("cudaDeviceSynchronize", "cudaStreamSynchronize",
                                                "cudaThreadSynchronize", "cudaMemcpy"))),
                 hasAncestor(stmt(anyOf(forStmt(), whileStmt(), doStmt(), cxxForRangeStmt()))))
            .bind("sync"),
        this);
    finder.addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                               callee(decl(anyOf(functionDecl(hasName("::gdrt::synchronize")),
                                                 cxxMethodDecl(hasName("synchronize"), ofClass(hasName("::gdrt::Stream")))))),
                               hasAncestor(stmt(anyOf(forStmt(), whileStmt(), doStmt(), cxxForRangeStmt()))))
                          .bind("sync"),
                      this);
  }

  void run(const MatchFinder::MatchResult& result) override {
    context_ = result.Context;
    const auto* call = result.Nodes.getNodeAs<CallExpr>("sync");
    const std::string name = gdrt_call(call) ? gdrt_sync_name(call) : callee_name(call);
    if (name == "cudaMemcpy") {
      auto copy = as_copy(call);
      if (!copy || copy->kind != CopyKind::DeviceToHost) return;
    }
    const Stmt* loop = enclosing_loop(call, *context_);
    if (loop == nullptr || conditional_within(call, loop) || !queues_gpu_work(loop)) return;
    if (host_code_uses(loop, staging_buffers(loop))) return;
    const SourceManager& sm = context_->getSourceManager();
    Finding finding = make(sm, call->getBeginLoc(),
                           (name == "cudaMemcpy" ? std::string("a blocking device-to-host cudaMemcpy")
                                                 : name) +
                               " runs on every iteration of a loop that queues GPU work: the host waits for the "
                               "GPU each step and cannot queue the next one. Synchronise once after the loop, "
                               "every N steps, or use events / cudaMemcpyAsync into pinned memory");
    note(finding, sm, loop->getBeginLoc(), "the loop");
    report(std::move(finding), call->getBeginLoc(), sm);
  }

 private:
  // A function or method declared in namespace gdrt (or one nested in it).
  static bool gdrt_call(const CallExpr* call) {
    const FunctionDecl* callee = call->getDirectCallee();
    for (const DeclContext* context = callee ? callee->getDeclContext() : nullptr; context;
         context = context->getParent())
      if (const auto* ns = dyn_cast<NamespaceDecl>(context); ns && ns->getName() == "gdrt") return true;
    return false;
  }

  static std::string gdrt_sync_name(const CallExpr* call) {
    return isa<CXXMemberCallExpr>(call) ? "Stream::synchronize()" : "gdrt::synchronize(device)";
  }

  // Under an if/switch/?: between the call and the loop: runs only sometimes.
  bool conditional_within(const Stmt* stmt, const Stmt* loop) const {
    DynTypedNode node = DynTypedNode::create(*stmt);
    for (int depth = 0; depth < 64; ++depth) {
      auto parents = context_->getParents(node);
      if (parents.empty()) return false;
      const Stmt* parent = parents[0].get<Stmt>();
      const Stmt* child = node.get<Stmt>();
      if (parent == nullptr) {
        // `cudaError_t status = (call);`, as CHECK macros write it: the
        // declaration sits between the call and the statements above it.
        if (parents[0].get<VarDecl>() == nullptr) return false;
        node = parents[0];
        continue;
      }
      // The sync is the loop's own condition (polling): not a step of the body.
      if (parent == loop) return !contains(body_of(loop), child);
      // The if's condition, init statement or condition variable runs every time.
      if (const auto* branch = dyn_cast<IfStmt>(parent);
          branch && child != nullptr && child != branch->getCond() && child != branch->getInit() &&
          child != branch->getConditionVariableDeclStmt())
        return true;
      if (isa<SwitchStmt, ConditionalOperator>(parent)) return true;
      node = parents[0];
    }
    return false;
  }

  static const Stmt* body_of(const Stmt* loop) {
    if (const auto* l = dyn_cast<ForStmt>(loop)) return l->getBody();
    if (const auto* l = dyn_cast<WhileStmt>(loop)) return l->getBody();
    if (const auto* l = dyn_cast<DoStmt>(loop)) return l->getBody();
    if (const auto* l = dyn_cast<CXXForRangeStmt>(loop)) return l->getBody();
    return nullptr;
  }

  static bool queues_gpu_work(const Stmt* loop) {
    bool work = false;
    bool multi_device = false;
    for_each_stmt(loop, [&](const Stmt* stmt) {
      if (isa<CUDAKernelCallExpr>(stmt)) work = true;
      if (const auto* call = dyn_cast<CallExpr>(stmt)) {
        const std::string name = callee_name(call);
        if (name == "cudaSetDevice") multi_device = true;  // one step per GPU, not per iteration
        if (gdrt_call(call) && name != "synchronize") work = true;  // tensor ops, modules, optimisers
        if (name == "cudaLaunchKernel" || name == "cudaMemcpyAsync" || name == "cudaGraphLaunch" ||
            name.rfind("cublas", 0) == 0 || name.rfind("cudnn", 0) == 0)
          work = true;
      }
    });
    return work && !multi_device;
  }

  // Host buffers the loop's async copies stage through: destinations of
  // device-to-host copies, sources of host-to-device ones, and the pointers
  // they are swapped or assigned with in the loop (the other half of a
  // double buffer).
  static std::set<const ValueDecl*> staging_buffers(const Stmt* loop) {
    std::set<const ValueDecl*> staged;
    std::vector<std::pair<const ValueDecl*, const ValueDecl*>> aliases;
    for_each_stmt(loop, [&](const Stmt* stmt) {
      if (const auto* assign = dyn_cast<BinaryOperator>(stmt); assign && assign->getOpcode() == BO_Assign) {
        aliases.emplace_back(pointer_base(assign->getLHS()), pointer_base(assign->getRHS()));
        return;
      }
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr) return;
      if (callee_name(call) == "swap" && call->getNumArgs() == 2)
        aliases.emplace_back(pointer_base(call->getArg(0)), pointer_base(call->getArg(1)));
      const auto copy = as_copy(call);
      if (!copy || !copy->async) return;
      const ValueDecl* host = copy->kind == CopyKind::DeviceToHost   ? pointer_base(copy->dst)
                              : copy->kind == CopyKind::HostToDevice ? pointer_base(copy->src)
                                                                     : nullptr;
      if (host != nullptr) staged.insert(host);
    });
    for (bool grew = !staged.empty(); grew;) {
      grew = false;
      for (const auto& [a, b] : aliases) {
        if (a == nullptr || b == nullptr || staged.count(a) == staged.count(b)) continue;
        staged.insert(staged.count(a) ? b : a);
        grew = true;
      }
    }
    return staged;
  }

  // Host code in the loop reads an element of a staged buffer or hands it to
  // a host function (fwrite, fread, memcpy): the loop's sync is what makes
  // that safe. CUDA calls that take the buffer are the copies themselves.
  static bool host_code_uses(const Stmt* loop, const std::set<const ValueDecl*>& staged) {
    if (staged.empty()) return false;
    bool used = false;
    for_each_stmt(loop, [&](const Stmt* stmt) {
      if (used) return;
      if (const auto* read = dyn_cast<ImplicitCastExpr>(stmt); read && read->getCastKind() == CK_LValueToRValue) {
        const Expr* element = read->getSubExpr()->IgnoreParens();
        if (isa<ArraySubscriptExpr>(element)) used = staged.count(pointer_base(element)) > 0;
        if (const auto* deref = dyn_cast<UnaryOperator>(element); deref && deref->getOpcode() == UO_Deref)
          used = staged.count(pointer_base(deref->getSubExpr())) > 0;
        return;
      }
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr || isa<CUDAKernelCallExpr>(call)) return;
      const std::string name = callee_name(call);
      if (name.empty() || name == "swap" || is_cuda_runtime_api(name)) return;
      for (const Expr* arg : call->arguments())
        if (staged.count(pointer_base(arg))) used = true;
    });
    return used;
  }

  ASTContext* context_ = nullptr;
};

GPUDIAG_REGISTER_CHECK(SyncInLoop, "sync-in-loop");

}  // namespace
}  // namespace gpudiag::lint
