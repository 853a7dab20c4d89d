#include "cuda_model.h"

#include <algorithm>
#include <iterator>

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/Lex/Lexer.h>

namespace gpudiag::lint {
using namespace clang;

std::string callee_name(const CallExpr* call) {
  const FunctionDecl* callee = call ? call->getDirectCallee() : nullptr;
  if (callee == nullptr || !callee->getDeclName().isIdentifier()) return {};
  llvm::StringRef name = callee->getName();
  if (name.starts_with("cu") && (name.ends_with("_ptsz") || name.ends_with("_ptds"))) name = name.drop_back(5);
  return name.str();
}

const Expr* call_arg(const CallExpr* call, unsigned i) {
  if (call == nullptr || i >= call->getNumArgs()) return nullptr;
  const Expr* arg = call->getArg(i);
  if (isa<CXXDefaultArgExpr>(arg)) return nullptr;
  return arg;
}

namespace {
// Driver-API device addresses are integers (CUdeviceptr): an array of them is
// an array of allocations, like an array of pointers.
bool is_handle_type(QualType type) {
  for (const auto* typedef_type = type->getAs<TypedefType>(); typedef_type;
       typedef_type = typedef_type->getDecl()->getUnderlyingType()->getAs<TypedefType>())
    if (typedef_type->getDecl()->getName() == "CUdeviceptr") return true;
  return false;
}
}  // namespace

const ValueDecl* pointer_base(const Expr* expr, bool any_object) {
  while (expr != nullptr) {
    expr = expr->IgnoreParenImpCasts();
    if (const auto* cast = dyn_cast<ExplicitCastExpr>(expr)) {
      expr = cast->getSubExpr();
    } else if (const auto* unary = dyn_cast<UnaryOperator>(expr)) {
      if (unary->getOpcode() != UO_AddrOf) return nullptr;
      expr = unary->getSubExpr();
    } else if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(expr)) {
      // An element that is itself a pointer (float* bufs[4]; bufs[i]) is its own
      // allocation, not memory inside the array: elements are not tracked.
      if (subscript->getType()->isPointerType() || is_handle_type(subscript->getType())) return nullptr;
      expr = subscript->getBase();
    } else if (const auto* binary = dyn_cast<BinaryOperator>(expr)) {
      if (!binary->isAdditiveOp()) return nullptr;
      expr = binary->getLHS()->getType()->isPointerType() ? binary->getLHS() : binary->getRHS();
    } else if (const auto* ref = dyn_cast<DeclRefExpr>(expr)) {
      return ref->getDecl();
    } else if (const auto* member = dyn_cast<MemberExpr>(expr)) {
      // A field names one pointer only inside its own object (this->buf);
      // plan[i].buf or a.buf / b.buf would conflate different objects.
      if (!any_object && !isa<CXXThisExpr>(member->getBase()->IgnoreParenImpCasts())) return nullptr;
      return member->getMemberDecl();
    } else if (const auto* method = dyn_cast<CXXMemberCallExpr>(expr)) {
      const auto* decl = method->getMethodDecl();
      if (decl == nullptr || !decl->getDeclName().isIdentifier() ||
          (decl->getName() != "data" && decl->getName() != "get"))
        return nullptr;
      expr = method->getImplicitObjectArgument();
    } else if (const auto* op = dyn_cast<CXXOperatorCallExpr>(expr)) {
      if (op->getOperator() != OO_Subscript || op->getType()->isPointerType()) return nullptr;
      expr = op->getArg(0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

namespace {
std::string variable_stream_key(const ValueDecl* decl) {
  return decl->getNameAsString() + "@" + std::to_string(reinterpret_cast<std::uintptr_t>(decl));
}
}  // namespace

bool per_thread_default_stream(const ASTContext& context) {
  if (context.getLangOpts().GPUDefaultStream == LangOptions::GPUDefaultStreamKind::PerThread) return true;
  // nvcc --default-stream per-thread defines the macro; so may the code itself.
  auto macro = context.Idents.find("CUDA_API_PER_THREAD_DEFAULT_STREAM");
  return macro != context.Idents.end() && macro->getValue()->hasMacroDefinition();
}

namespace {
// cudaStreamLegacy / CU_STREAM_LEGACY are the handle 0x1, cudaStreamPerThread
// / CU_STREAM_PER_THREAD 0x2 (driver_types.h, cuda.h).
std::optional<std::string> special_stream_key(const Expr* bare, const ASTContext& context) {
  std::optional<bool> legacy;
  if (const auto* literal = dyn_cast<IntegerLiteral>(bare)) {
    if (literal->getValue() == 1) legacy = true;
    if (literal->getValue() == 2) legacy = false;
  } else if (const auto* ref = dyn_cast<DeclRefExpr>(bare); ref && ref->getDecl()->getDeclName().isIdentifier()) {
    const auto name = ref->getDecl()->getName();
    if (name == "cudaStreamLegacy" || name == "CU_STREAM_LEGACY") legacy = true;
    if (name == "cudaStreamPerThread" || name == "CU_STREAM_PER_THREAD") legacy = false;
  }
  if (!legacy) return std::nullopt;
  if (*legacy != per_thread_default_stream(context)) return std::string("<default>");
  return std::string(*legacy ? "<legacy>" : "<per-thread>");
}
}  // namespace

std::string stream_key(const Expr* stream, const ASTContext& context) {
  if (stream == nullptr) return "<default>";
  const Expr* bare = stream->IgnoreParenCasts();
  if (bare->isNullPointerConstant(const_cast<ASTContext&>(context), Expr::NPC_ValueDependentIsNotNull))
    return "<default>";
  if (auto special = special_stream_key(bare, context)) return *special;
  if (const auto* ref = dyn_cast<DeclRefExpr>(bare)) return variable_stream_key(ref->getDecl());
  // A member names one stream within its own object (this->stream_).
  if (const auto* member = dyn_cast<MemberExpr>(bare); member && isa<CXXThisExpr>(member->getBase()->IgnoreParenImpCasts()))
    return variable_stream_key(member->getMemberDecl());
  const SourceManager& sm = context.getSourceManager();
  CharSourceRange range = CharSourceRange::getTokenRange(stream->getSourceRange());
  return Lexer::getSourceText(range, sm, context.getLangOpts()).str();
}

std::string stream_label(const std::string& key) {
  if (key == "<default>") return "the default stream";
  if (key == "<legacy>") return "the legacy default stream";
  if (key == "<per-thread>") return "the per-thread default stream";
  return "'" + key.substr(0, key.find('@')) + "'";
}

const Expr* launch_stream(const CUDAKernelCallExpr* launch) {
  return call_arg(launch->getConfig(), 3);
}

std::string kernel_name(const CUDAKernelCallExpr* launch) {
  if (const FunctionDecl* callee = launch->getDirectCallee()) return callee->getNameAsString();
  return "kernel";
}

bool is_cuda_free(std::string_view callee) {
  return callee == "cudaFree" || callee == "cudaFreeAsync" || callee == "cudaFreeHost" || callee == "cuMemFree" ||
         callee == "cuMemFree_v2" || callee == "cuMemFreeAsync" || callee == "cuMemFreeHost";
}

bool is_status_type(QualType type) {
  if (type.isNull()) return false;
  static constexpr std::string_view kStatus[] = {
      "cudaError_t", "enum cudaError", "cudaError", "CUresult", "enum cudaError_enum", "cudnnStatus_t",
      "cublasStatus_t", "curandStatus_t", "cufftResult", "cufftResult_t", "cusparseStatus_t",
      "cusolverStatus_t", "ncclResult_t", "nvrtcResult", "cublasLtStatus_t"};
  const auto named = [](std::string_view name) {
    return std::find(std::begin(kStatus), std::end(kStatus), name) != std::end(kStatus);
  };
  if (named(type.getUnqualifiedType().getAsString())) return true;
  // Through aliases down to the status: CUB's functions return
  // `::cuda::std::enable_if_t<..., cudaError_t>`.
  for (const TypedefType* alias = type->getAs<TypedefType>(); alias != nullptr;
       alias = alias->desugar()->getAs<TypedefType>())
    if (named(alias->getDecl()->getName())) return true;
  return named(type.getCanonicalType().getUnqualifiedType().getAsString());
}

bool is_device_or_global(const FunctionDecl* function) {
  return function != nullptr && (function->hasAttr<CUDAGlobalAttr>() || function->hasAttr<CUDADeviceAttr>());
}

bool is_device_only(const FunctionDecl* function) {
  return is_device_or_global(function) && !function->hasAttr<CUDAHostAttr>();
}

bool is_cuda_runtime_api(std::string_view name) {
  return name.substr(0, 4) == "cuda" || name.substr(0, 5) == "cudnn" || name.substr(0, 6) == "cublas" ||
         (name.size() > 2 && name.substr(0, 2) == "cu" && name[2] >= 'A' && name[2] <= 'Z');
}

std::string_view describe(MemKind kind) {
  switch (kind) {
    case MemKind::Device: return "device memory";
    case MemKind::Managed: return "managed memory";
    case MemKind::HostPinned: return "pinned host memory";
    case MemKind::HostPageable: return "pageable host memory";
  }
  return "memory";
}

std::optional<MemKind> allocation_kind(std::string_view callee) {
  if (callee == "cudaMalloc" || callee == "cudaMallocAsync" || callee == "cudaMallocPitch" ||
      callee == "cudaMallocFromPoolAsync" || callee == "cuMemAlloc" || callee == "cuMemAlloc_v2" ||
      callee == "cuMemAllocAsync")
    return MemKind::Device;
  if (callee == "cudaMallocManaged" || callee == "cuMemAllocManaged") return MemKind::Managed;
  if (callee == "cudaMallocHost" || callee == "cudaHostAlloc" || callee == "cuMemAllocHost" ||
      callee == "cuMemHostAlloc")
    return MemKind::HostPinned;
  return std::nullopt;
}

CopyKind copy_kind_of(const Expr* kind) {
  if (kind == nullptr) return CopyKind::Unknown;
  const auto* ref = dyn_cast<DeclRefExpr>(kind->IgnoreParenImpCasts());
  if (ref == nullptr) return CopyKind::Unknown;
  const std::string name = ref->getDecl()->getNameAsString();
  if (name == "cudaMemcpyHostToDevice") return CopyKind::HostToDevice;
  if (name == "cudaMemcpyDeviceToHost") return CopyKind::DeviceToHost;
  if (name == "cudaMemcpyDeviceToDevice") return CopyKind::DeviceToDevice;
  if (name == "cudaMemcpyHostToHost") return CopyKind::HostToHost;
  if (name == "cudaMemcpyDefault") return CopyKind::Default;
  return CopyKind::Unknown;
}

std::optional<CopyCall> as_copy(const CallExpr* call) {
  const std::string name = callee_name(call);
  CopyCall copy;
  if (name == "cudaMemcpy" || name == "cudaMemcpyAsync") {
    if (call->getNumArgs() < 4) return std::nullopt;
    copy = {call->getArg(0), call->getArg(1), call->getArg(2), copy_kind_of(call->getArg(3)), call_arg(call, 4),
            name == "cudaMemcpyAsync"};
  } else if (name == "cudaMemcpy2D" || name == "cudaMemcpy2DAsync") {
    if (call->getNumArgs() < 7) return std::nullopt;
    copy = {call->getArg(0), call->getArg(2), call->getArg(4), copy_kind_of(call->getArg(6)), call_arg(call, 7),
            name == "cudaMemcpy2DAsync"};
  } else {
    return std::nullopt;
  }
  return copy;
}

const Stmt* enclosing_loop(const Stmt* stmt, ASTContext& context) {
  DynTypedNode node = DynTypedNode::create(*stmt);
  for (int depth = 0; depth < 64; ++depth) {
    auto parents = context.getParents(node);
    if (parents.empty()) return nullptr;
    node = parents[0];
    if (node.get<FunctionDecl>() || node.get<LambdaExpr>()) return nullptr;
    if (const Stmt* parent = node.get<Stmt>()) {
      // do { ... } while (0) is a macro idiom, not a loop.
      if (const auto* loop = dyn_cast<DoStmt>(parent)) {
        bool repeats = true;
        if (loop->getCond()->EvaluateAsBooleanCondition(repeats, context) && !repeats) continue;
        return parent;
      }
      if (isa<ForStmt, WhileStmt, CXXForRangeStmt>(parent)) return parent;
    }
  }
  return nullptr;
}

bool contains(const Stmt* stmt, const Stmt* inner) {
  if (stmt == nullptr) return false;
  if (stmt == inner) return true;
  for (const Stmt* child : stmt->children())
    if (contains(child, inner)) return true;
  return false;
}

void for_each_stmt(const Stmt* stmt, const std::function<void(const Stmt*)>& visit) {
  // sizeof *p and decltype(p[0]) do not evaluate their operand.
  if (stmt == nullptr || isa<LambdaExpr, UnaryExprOrTypeTraitExpr>(stmt)) return;
  visit(stmt);
  for (const Stmt* child : stmt->children()) for_each_stmt(child, visit);
}

bool uses_cuda(const Stmt* body) {
  if (body == nullptr) return false;
  if (isa<CUDAKernelCallExpr>(body)) return true;
  if (const auto* call = dyn_cast<CallExpr>(body); call && is_cuda_runtime_api(callee_name(call))) return true;
  for (const Stmt* child : body->children())
    if (uses_cuda(child)) return true;
  return false;
}

bool mentions(const Stmt* stmt, const ValueDecl* decl) {
  if (stmt == nullptr) return false;
  if (const auto* ref = dyn_cast<DeclRefExpr>(stmt); ref && ref->getDecl() == decl) return true;
  for (const Stmt* child : stmt->children())
    if (mentions(child, decl)) return true;
  return false;
}

std::string stream_key(const ValueDecl* variable) { return variable_stream_key(variable); }

}  // namespace gpudiag::lint
