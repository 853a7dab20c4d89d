// What the host waits for: the CUDA calls that synchronise, by the table
// below, and the streams created non-blocking.
#include "sync_model.h"

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>

namespace gpudiag::lint {
using namespace clang;

namespace {

// What the host has waited for when a CUDA call returns, after the CUDA
// Runtime API reference, "API synchronization behavior" and "Stream
// synchronization behavior"
// (https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html,
// https://docs.nvidia.com/cuda/cuda-runtime-api/stream-sync-behavior.html)
// and the driver API pages of the same names.
enum class Waits {
  Nothing,        // asynchronous with respect to the host
  Device,         // every stream of the device
  StreamArg,      // the stream in argument `arg`
  EventArg,       // the work the event in argument `arg` was recorded after
  PolledStream,   // cudaStreamQuery: a sync only when its result is tested
  PolledEvent,    // cudaEventQuery: likewise
  DefaultStream,  // a blocking call on the default stream
  BlockingCopy,   // cudaMemcpy & co: DefaultStream unless device to device (`arg`: the kind)
  AsyncCopy,      // cudaMemcpyAsync: its stream when device to pageable host (`arg`: the kind)
};
struct SyncRule {
  std::string_view name;
  Waits waits;
  unsigned arg = 0;
};
constexpr SyncRule kSyncTable[] = {
    {"cudaDeviceSynchronize", Waits::Device},
    {"cudaThreadSynchronize", Waits::Device},
    {"cudaDeviceReset", Waits::Device},
    {"cuCtxSynchronize", Waits::Device},
    // Releasing memory waits for the device first (cudaFree's implicit
    // synchronisation); the stream-ordered cudaFreeAsync does not.
    {"cudaFree", Waits::Device},
    {"cudaFreeHost", Waits::Device},
    {"cudaFreeArray", Waits::Device},
    {"cudaFreeMipmappedArray", Waits::Device},
    {"cuMemFree", Waits::Device},
    {"cuMemFreeHost", Waits::Device},
    {"cudaFreeAsync", Waits::Nothing},
    {"cuMemFreeAsync", Waits::Nothing},
    {"cudaStreamSynchronize", Waits::StreamArg, 0},
    {"cuStreamSynchronize", Waits::StreamArg, 0},
    {"cudaEventSynchronize", Waits::EventArg, 0},
    {"cuEventSynchronize", Waits::EventArg, 0},
    {"cudaStreamQuery", Waits::PolledStream, 0},
    {"cuStreamQuery", Waits::PolledStream, 0},
    {"cudaEventQuery", Waits::PolledEvent, 0},
    {"cuEventQuery", Waits::PolledEvent, 0},
    // Orders later work on a stream after the event; the host does not wait.
    {"cudaStreamWaitEvent", Waits::Nothing},
    {"cuStreamWaitEvent", Waits::Nothing},
    // Memcpy: a device-to-host copy returns once the copy is done; from pinned
    // memory to the device it is synchronous, from pageable memory the stream
    // is synchronised before the copy; device to device does not synchronise
    // the host. Either way the copy runs on the default stream.
    {"cudaMemcpy", Waits::BlockingCopy, 3},
    {"cudaMemcpy2D", Waits::BlockingCopy, 6},
    {"cudaMemcpyToSymbol", Waits::BlockingCopy, 4},
    {"cudaMemcpyFromSymbol", Waits::BlockingCopy, 4},
    {"cudaMemcpy2DToArray", Waits::BlockingCopy, 6},
    {"cudaMemcpy2DFromArray", Waits::BlockingCopy, 6},
    {"cudaMemcpy3D", Waits::DefaultStream},
    {"cudaMemcpyPeer", Waits::Nothing},
    {"cuMemcpyDtoH", Waits::DefaultStream},
    {"cuMemcpyHtoD", Waits::DefaultStream},
    {"cuMemcpy", Waits::DefaultStream},
    {"cuMemcpy2D", Waits::DefaultStream},
    {"cuMemcpy3D", Waits::DefaultStream},
    {"cuMemcpyDtoD", Waits::Nothing},
    {"cudaMemcpyAsync", Waits::AsyncCopy, 3},
    {"cudaMemcpy2DAsync", Waits::AsyncCopy, 6},
    // Memset: asynchronous with respect to the host for device memory (the
    // pinned and managed targets that make it synchronous are rare).
    {"cudaMemset", Waits::Nothing},
    {"cudaMemset2D", Waits::Nothing},
    {"cudaMemset3D", Waits::Nothing},
    {"cudaMemsetAsync", Waits::Nothing},
    {"cuMemsetD8", Waits::Nothing},
    {"cuMemsetD16", Waits::Nothing},
    {"cuMemsetD32", Waits::Nothing},
    // Allocations order streams on the device ("implicit synchronization")
    // but do not make the host wait for queued work.
    {"cudaMalloc", Waits::Nothing},
    {"cudaMallocHost", Waits::Nothing},
    {"cudaHostAlloc", Waits::Nothing},
    {"cudaMallocManaged", Waits::Nothing},
    {"cudaMallocAsync", Waits::Nothing},
};

const SyncRule* sync_rule(std::string_view name) {
  if (name.size() > 3 && name.substr(name.size() - 3) == "_v2") name.remove_suffix(3);  // cuMemcpyDtoH_v2
  for (const SyncRule& rule : kSyncTable)
    if (rule.name == name) return &rule;
  return nullptr;
}

// Is the node (a query, or what holds its result) the condition, or part of
// the condition, of a loop or a branch?
bool tested_in_condition(DynTypedNode node, ASTContext& context, int depth = 0) {
  if (depth > 8) return false;
  const auto parents = context.getParents(node);
  if (parents.empty()) return false;
  const Stmt* child = node.get<Stmt>();
  const DynTypedNode& parent_node = parents[0];
  if (const auto* loop = parent_node.get<WhileStmt>()) return loop->getCond() == child;
  if (const auto* loop = parent_node.get<DoStmt>()) return loop->getCond() == child;
  if (const auto* loop = parent_node.get<ForStmt>()) return loop->getCond() == child;
  if (const auto* branch = parent_node.get<IfStmt>()) return branch->getCond() == child;
  if (const auto* choice = parent_node.get<ConditionalOperator>()) return choice->getCond() == child;
  const Stmt* parent = parent_node.get<Stmt>();
  if (parent == nullptr) return false;
  if (isa<ParenExpr, ImplicitCastExpr, ExplicitCastExpr>(parent) ||
      (isa<UnaryOperator>(parent) && cast<UnaryOperator>(parent)->getOpcode() == UO_LNot))
    return tested_in_condition(parent_node, context, depth + 1);
  if (const auto* binary = dyn_cast<BinaryOperator>(parent)) {
    // (st = cudaStreamQuery(s)) == cudaErrorNotReady, q != cudaSuccess, a && q == 0
    if (binary->getOpcode() == BO_Assign && binary->getRHS() == child)
      return tested_in_condition(parent_node, context, depth + 1);
    if (binary->isEqualityOp() || binary->isLogicalOp()) return tested_in_condition(parent_node, context, depth + 1);
  }
  return false;
}

// cudaError_t st; do { st = cudaStreamQuery(s); } while (st == cudaErrorNotReady);
bool result_tested_by_loop(const CallExpr* query, ASTContext& context) {
  const auto parents = context.getParents(*query);
  if (parents.empty()) return false;
  const ValueDecl* status = nullptr;
  if (const auto* assign = parents[0].get<BinaryOperator>(); assign && assign->getOpcode() == BO_Assign)
    if (const auto* ref = dyn_cast<DeclRefExpr>(assign->getLHS()->IgnoreParenImpCasts())) status = ref->getDecl();
  if (const auto* var = parents[0].get<VarDecl>()) status = var;
  if (status == nullptr) return false;
  const Stmt* loop = enclosing_loop(query, context);
  const Stmt* condition = nullptr;
  if (const auto* d = dyn_cast_or_null<DoStmt>(loop)) condition = d->getCond();
  if (const auto* w = dyn_cast_or_null<WhileStmt>(loop)) condition = w->getCond();
  if (const auto* f = dyn_cast_or_null<ForStmt>(loop)) condition = f->getCond();
  return condition != nullptr && mentions(condition, status);
}

// A query is a wait only when the code tests its result (a polling loop that
// exits once the work is done, or a branch on it); a query whose result is
// ignored waits for nothing.
bool polls(const CallExpr* query, ASTContext& context) {
  return tested_in_condition(DynTypedNode::create(*query), context) || result_tested_by_loop(query, context);
}

}  // namespace

SyncCall stream_sync(const std::string& key, const ASTContext& context) {
  const std::string legacy = per_thread_default_stream(context) ? "<legacy>" : "<default>";
  if (key == legacy) return {SyncKind::Legacy, {}};
  return {SyncKind::Stream, key};
}

SyncCall as_sync(const CallExpr* call, ASTContext& context, const OriginLookup& origin_of,
                 const HelperSyncLookup& helper_sync) {
  const std::string name = callee_name(call);
  if (const SyncRule* rule = sync_rule(name)) {
    auto on_stream = [&](const Expr* stream) {
      SyncCall sync = stream_sync(stream_key(stream, context), context);
      sync.handle = stream;
      return sync;
    };
    switch (rule->waits) {
      case Waits::Nothing: return {};
      case Waits::Device: return {SyncKind::Device, {}};
      case Waits::StreamArg: return on_stream(call_arg(call, rule->arg));
      case Waits::EventArg:
        return {SyncKind::Event, stream_key(call_arg(call, rule->arg), context), call_arg(call, rule->arg)};
      case Waits::PolledStream:
        return polls(call, context) ? on_stream(call_arg(call, rule->arg)) : SyncCall{};
      case Waits::PolledEvent:
        if (!polls(call, context)) return {};
        return {SyncKind::Event, stream_key(call_arg(call, rule->arg), context), call_arg(call, rule->arg)};
      case Waits::DefaultStream: return on_stream(nullptr);
      case Waits::BlockingCopy:
        if (copy_kind_of(call_arg(call, rule->arg)) == CopyKind::DeviceToDevice) return {};
        return on_stream(nullptr);
      case Waits::AsyncCopy: {
        // Into pageable memory the copy returns only once it is done, so
        // everything queued before it on its stream is done too.
        auto copy = as_copy(call);
        if (!copy || copy->kind != CopyKind::DeviceToHost || !origin_of) return {};
        const Origin* origin = origin_of(copy->dst);
        if (origin == nullptr || origin->kind != MemKind::HostPageable) return {};
        return on_stream(copy->stream);
      }
    }
    return {};
  }
  if (is_cuda_runtime_api(name)) return {};
  return helper_sync ? helper_sync(call) : SyncCall{};
}


std::set<std::string> nonblocking_streams(const Stmt* body) {
  std::set<std::string> keys;
  for (const ValueDecl* stream : nonblocking_stream_variables(body)) keys.insert(stream_key(stream));
  return keys;
}

std::set<const ValueDecl*> nonblocking_stream_variables(const Stmt* body) {
  std::set<const ValueDecl*> streams;
  for_each_stmt(body, [&](const Stmt* stmt) {
    const auto* call = dyn_cast<CallExpr>(stmt);
    if (call == nullptr) return;
    const std::string name = callee_name(call);
    if (name != "cudaStreamCreateWithFlags" && name != "cudaStreamCreateWithPriority" && name != "cuStreamCreate" &&
        name != "cuStreamCreateWithPriority")
      return;
    const Expr* flags = call_arg(call, 1);
    if (flags == nullptr) return;
    bool nonblocking = false;
    for_each_stmt(flags, [&](const Stmt* part) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(part)) {
        const auto name = ref->getDecl()->getName();
        if (name == "cudaStreamNonBlocking" || name == "CU_STREAM_NON_BLOCKING") nonblocking = true;
      }
    });
    // The macro cudaStreamNonBlocking expands to 0x01.
    Expr::EvalResult value;
    if (!nonblocking && !flags->isValueDependent() && flags->EvaluateAsInt(value, call->getCalleeDecl()->getASTContext()))
      nonblocking = (value.Val.getInt().getZExtValue() & 1u) != 0;
    if (!nonblocking) return;
    if (const ValueDecl* stream = pointer_base(call_arg(call, 0))) streams.insert(stream);
  });
  return streams;
}

bool sync_covers(SyncKind kind, const std::string& stream, const std::set<std::string>& nonblocking) {
  switch (kind) {
    case SyncKind::Device: return true;
    // The legacy default stream waits for the blocking streams, the
    // per-thread default stream included, and for its own work.
    case SyncKind::Legacy: return nonblocking.count(stream) == 0;
    default: return false;
  }
}

bool sync_covers(const SyncCall& sync, const std::string& stream, const std::set<std::string>& nonblocking) {
  if (sync.kind == SyncKind::Stream) return sync.key == stream;
  return sync_covers(sync.kind, stream, nonblocking);
}

}  // namespace gpudiag::lint
