#include "cuda_model.h"

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
  const std::string name = type.getUnqualifiedType().getAsString();
  static constexpr std::string_view kStatus[] = {
      "cudaError_t", "enum cudaError", "cudaError", "CUresult", "enum cudaError_enum", "cudnnStatus_t",
      "cublasStatus_t", "curandStatus_t", "cufftResult", "cufftResult_t", "cusparseStatus_t",
      "cusolverStatus_t", "ncclResult_t", "nvrtcResult", "cublasLtStatus_t"};
  for (auto status : kStatus)
    if (name == status) return true;
  return false;
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

namespace {

// std::vector with the default allocator (a vector with a pinned-memory
// allocator is not pageable).
bool is_std_vector(QualType type) {
  const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || !record->getDeclName().isIdentifier() || record->getName() != "vector" ||
      !record->isInStdNamespace())
    return false;
  const auto* specialization = dyn_cast<ClassTemplateSpecializationDecl>(record);
  if (specialization == nullptr || specialization->getTemplateArgs().size() < 2) return true;
  const TemplateArgument& allocator = specialization->getTemplateArgs()[1];
  if (allocator.getKind() != TemplateArgument::Type) return false;
  const auto* allocator_record = allocator.getAsType()->getAsCXXRecordDecl();
  return allocator_record != nullptr && allocator_record->getDeclName().isIdentifier() &&
         allocator_record->getName() == "allocator" && allocator_record->isInStdNamespace();
}

}  // namespace

ValueSource classify_pointer_value(const Expr* value, const OriginHints* hints) {
  ValueSource source;
  if (value == nullptr) return source;
  const Expr* bare = value->IgnoreParenCasts();
  if (isa<CXXNullPtrLiteralExpr>(bare) || isa<GNUNullExpr>(bare)) return source;
  if (const auto* literal = dyn_cast<IntegerLiteral>(bare); literal && literal->getValue() == 0) return source;
  if (const auto* call = dyn_cast<CallExpr>(bare)) {
    const std::string name = callee_name(call);
    if (name == "malloc" || name == "calloc" || name == "realloc" || name == "aligned_alloc") {
      source.origin = Origin{MemKind::HostPageable, value->getBeginLoc(), name};
      return source;
    }
    if (hints != nullptr) source.origin = hints->returned(*call);
  }
  if (isa<CXXNewExpr>(bare)) {
    source.origin = Origin{MemKind::HostPageable, value->getBeginLoc(), "new"};
    return source;
  }
  if (hints != nullptr && isa<MemberExpr>(bare))
    if (const auto* field = dyn_cast_or_null<FieldDecl>(pointer_base(bare, true))) source.origin = hints->field(*field);
  source.unknown = !source.origin;
  return source;
}

namespace {
using Source = ValueSource;

// Does argument i bind to a T*& parameter, through which the callee may
// assign the caller's pointer?
bool binds_pointer_reference(const CallExpr* call, unsigned i) {
  const FunctionDecl* callee = call->getDirectCallee();
  if (callee == nullptr || isa<CXXOperatorCallExpr>(call) || i >= callee->getNumParams()) return false;
  const QualType type = callee->getParamDecl(i)->getType();
  return type->isLValueReferenceType() && type.getNonReferenceType()->isPointerType() &&
         !type.getNonReferenceType().isConstQualified();
}

class OriginCollector {
 public:
  explicit OriginCollector(const OriginHints* hints) : hints_(hints) {}
  // What every caller passes, before the body reassigns anything.
  void start(const FunctionDecl& function) {
    if (hints_ == nullptr) return;
    for (const ParmVarDecl* param : function.parameters())
      if (param->getType()->isPointerType())
        if (auto origin = hints_->parameter(*param)) merge(param, Source{false, origin});
  }
  void visit(const Stmt* stmt) {
    if (stmt == nullptr) return;
    if (const auto* decl_stmt = dyn_cast<DeclStmt>(stmt)) {
      for (const Decl* decl : decl_stmt->decls())
        if (const auto* var = dyn_cast<VarDecl>(decl)) on_var(var);
    } else if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->getOpcode() == BO_Assign) {
      if (const auto* ref = dyn_cast<DeclRefExpr>(binary->getLHS()->IgnoreParenImpCasts()))
        merge(ref->getDecl(), value_source(binary->getRHS()));
    } else if (const auto* call = dyn_cast<CallExpr>(stmt)) {
      on_call(call);
    } else if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      if (isa<ParmVarDecl>(ref->getDecl())) on_vector_use(ref->getDecl(), "a std::vector parameter");
      else if (const auto* var = dyn_cast<VarDecl>(ref->getDecl()); var && !var->isLocalVarDecl())
        on_vector_use(var, "a global std::vector");
      else if (var && var->getType()->isReferenceType())
        on_vector_use(var, "a reference to a std::vector");
    } else if (const auto* member = dyn_cast<MemberExpr>(stmt);
               member && isa<CXXThisExpr>(member->getBase()->IgnoreParenImpCasts())) {
      on_vector_use(member->getMemberDecl(), "a std::vector member");
    } else if (isa<LambdaExpr>(stmt)) {
      return;  // a lambda body is another function
    }
    for (const Stmt* child : stmt->children()) visit(child);
  }
  std::map<const ValueDecl*, Origin> result() const {
    std::map<const ValueDecl*, Origin> out;
    for (const auto& [decl, entry] : entries_) {
      if (entry.unknown || !entry.origin) continue;
      out.emplace(decl, *entry.origin);
    }
    return out;
  }

 private:
  using Entry = ValueSource;
  void merge(const ValueDecl* decl, const Source& source) {
    Entry& entry = entries_[decl];
    if (source.unknown) entry.unknown = true;
    if (!source.origin) return;
    if (entry.origin && entry.origin->kind != source.origin->kind) entry.unknown = true;
    // A local assignment is the memory itself, not something every caller passes.
    if (!entry.origin || !source.origin->from_callers) entry.origin = source.origin;
  }
  void on_var(const VarDecl* var) {
    if (!var->isLocalVarDecl() || var->hasAttr<CUDASharedAttr>() || var->hasAttr<CUDADeviceAttr>() ||
        var->hasAttr<CUDAConstantAttr>())
      return;
    if (var->getType()->isConstantArrayType() && !var->isStaticLocal()) {
      merge(var, Source{false, Origin{MemKind::HostPageable, var->getLocation(), "a stack array"}});
    } else if (is_std_vector(var->getType()) && !var->getType()->isReferenceType()) {
      merge(var, Source{false, Origin{MemKind::HostPageable, var->getLocation(), "std::vector"}});
    } else if (var->getType()->isPointerType() && var->hasInit()) {
      merge(var, value_source(var->getInit()));
    }
  }
  // What a pointer is set to: an allocation, or a pointer into memory the
  // function already knows (p = images.data() + offset; q = p), which has
  // that memory's origin.
  Source value_source(const Expr* value) {
    Source source = classify_pointer_value(value, hints_);
    if (!source.unknown) return source;
    const ValueDecl* base = pointer_base(value);
    if (base == nullptr) return source;
    if (auto known = entries_.find(base); known != entries_.end())
      return known->second.unknown || !known->second.origin ? source : Source{false, known->second.origin};
    if (is_std_vector(base->getType()))
      return Source{false, Origin{MemKind::HostPageable, base->getLocation(), "std::vector"}};
    return source;
  }
  // A std::vector the function did not declare (parameter, member, global,
  // reference) still holds pageable memory.
  void on_vector_use(const ValueDecl* decl, const char* how) {
    if (entries_.count(decl) || !is_std_vector(decl->getType())) return;
    merge(decl, Source{false, Origin{MemKind::HostPageable, decl->getLocation(), how}});
  }
  void on_call(const CallExpr* call) {
    const std::string name = callee_name(call);
    const ValueDecl* target = call->getNumArgs() > 0 ? pointer_base(call->getArg(0)) : nullptr;
    if (auto kind = allocation_kind(name); kind && target) {
      // cudaMalloc(&p) allocates p; cudaMalloc(pp) with pp an out-parameter
      // (T** pp) allocates *pp, which is not tracked: pp itself stays host memory.
      const auto* address = dyn_cast<UnaryOperator>(call->getArg(0)->IgnoreParenCasts());
      if (address != nullptr && address->getOpcode() == UO_AddrOf)
        merge(target, Source{false, Origin{*kind, call->getBeginLoc(), name}});
    } else if ((name == "cudaHostRegister" || name == "cuMemHostRegister") && target) {
      // Registration pins what was pageable: it replaces the earlier origin.
      entries_[target].origin = Origin{MemKind::HostPinned, call->getBeginLoc(), name};
    } else if (!name.empty() && !is_cuda_runtime_api(name)) {
      // &p handed to unknown code may be assigned there; a function of the
      // TU whose summary says what it stores there assigns that.
      for (unsigned i = 0; i < call->getNumArgs(); ++i) {
        const Expr* arg = call->getArg(i);
        std::optional<Origin> stored = hints_ != nullptr ? hints_->stored(*call, i) : std::nullopt;
        const auto* unary = dyn_cast<UnaryOperator>(arg->IgnoreParenCasts());
        const ValueDecl* decl = nullptr;
        if (unary && unary->getOpcode() == UO_AddrOf) decl = pointer_base(unary->getSubExpr());
        else if (binds_pointer_reference(call, i)) decl = pointer_base(arg);
        if (decl == nullptr || !decl->getType()->isPointerType()) continue;
        if (stored) merge(decl, Source{false, stored});
        else entries_[decl].unknown = true;
      }
    }
  }
  const OriginHints* hints_;
  std::map<const ValueDecl*, Entry> entries_;
};

}  // namespace

std::map<const ValueDecl*, Origin> pointer_origins(const FunctionDecl& function, const OriginHints* hints) {
  OriginCollector collector(hints);
  collector.start(function);
  collector.visit(function.getBody());
  return collector.result();
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
