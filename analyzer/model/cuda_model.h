// What the checks know about CUDA host code: which call is which API, what
// kinds of memory there are, which stream a call uses. Where a pointer's
// memory came from is model/pointer_origins.h.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>

namespace gpudiag::lint {

// Plain name of the called function ("cudaMemcpyAsync"); "" when indirect.
// The per-thread default stream variants the CUDA headers switch to
// (cudaMemcpyAsync_ptsz, cudaMemcpy_ptds) answer with the plain name.
std::string callee_name(const clang::CallExpr* call);
// Argument i, or nullptr when absent or filled in from a default argument.
const clang::Expr* call_arg(const clang::CallExpr* call, unsigned i);
// The variable/field a pointer expression points into: p, &p, p + i, &p[i],
// (void**)&p, v.data(), &v[0]; nullptr otherwise.
// With `any_object`, s->buf and plan[i].buf give the field too (which object
// is then unknown: only for facts true of every object, model/provenance.h).
const clang::ValueDecl* pointer_base(const clang::Expr* expr, bool any_object = false);
// A stable key for a stream expression: "<default>" for 0/NULL/absent and
// for the special handle the default stream means in this translation unit
// (cudaStreamLegacy, or cudaStreamPerThread under per-thread default streams);
// "<legacy>" / "<per-thread>" for the other special handle; else the variable
// or the spelled expression.
std::string stream_key(const clang::Expr* stream, const clang::ASTContext& context);
// Is the translation unit compiled with per-thread default streams (nvcc
// --default-stream per-thread, -DCUDA_API_PER_THREAD_DEFAULT_STREAM, clang
// -fgpu-default-stream=per-thread)? Then stream 0 is an ordinary stream of
// the calling thread that does not wait for other streams.
bool per_thread_default_stream(const clang::ASTContext& context);
// "s2" for display: the key without its identity suffix.
std::string stream_label(const std::string& key);
// The stream argument of k<<<g, b, shmem, stream>>>; nullptr for the default.
const clang::Expr* launch_stream(const clang::CUDAKernelCallExpr* launch);
// The kernel's name, for messages.
std::string kernel_name(const clang::CUDAKernelCallExpr* launch);
// cudaFree, cudaFreeAsync, cudaFreeHost, cuMemFree...: device-side frees.
bool is_cuda_free(std::string_view callee);
// cudaError_t, CUresult, cudnnStatus_t, cublasStatus_t, ...
bool is_status_type(clang::QualType type);
// __global__, or __device__ without __host__.
bool is_device_only(const clang::FunctionDecl* function);
bool is_device_or_global(const clang::FunctionDecl* function);
bool is_cuda_runtime_api(std::string_view name);

enum class MemKind { Device, Managed, HostPinned, HostPageable };
std::string_view describe(MemKind kind);
struct Origin {
  MemKind kind;
  clang::SourceLocation where;  // the allocation / declaration
  std::string how;              // "cudaMalloc", "malloc", "new[]", "a stack array", "std::vector"
  // A parameter whose every caller passes this memory: a misuse is reported
  // at the callers, where the memory is chosen (model/provenance.h).
  bool from_callers = false;
};

// What is known of pointers beyond one function body: what the functions of
// the translation unit return, store through out-parameters, are passed by
// every caller, and what struct fields hold (model/provenance.h fills it in).
class OriginHints {
 public:
  virtual ~OriginHints() = default;
  // The memory `call` returns: T* p = make_buffer(n).
  virtual std::optional<Origin> returned(const clang::CallExpr& call) const = 0;
  // The memory `call` stores through its argument `arg`: alloc(&p) with a
  // T** parameter, alloc(p) with a T*& one.
  virtual std::optional<Origin> stored(const clang::CallExpr& call, unsigned arg) const = 0;
  // The memory every caller passes as `param`.
  virtual std::optional<Origin> parameter(const clang::ParmVarDecl& param) const = 0;
  // The memory every assignment of the translation unit stores in `field`.
  virtual std::optional<Origin> field(const clang::FieldDecl& field) const = 0;
};

// The memory kind an allocation call gives to its first argument (cudaMalloc -> Device), if any.
std::optional<MemKind> allocation_kind(std::string_view callee);

enum class CopyKind { Unknown, HostToHost, HostToDevice, DeviceToHost, DeviceToDevice, Default };
struct CopyCall {
  const clang::Expr* dst = nullptr;
  const clang::Expr* src = nullptr;
  const clang::Expr* size = nullptr;  // bytes (width for 2D)
  CopyKind kind = CopyKind::Unknown;
  const clang::Expr* stream = nullptr;
  bool async = false;
};
// The direction a cudaMemcpyKind argument names; Unknown when not spelled out.
CopyKind copy_kind_of(const clang::Expr* kind);
// cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D, cudaMemcpy2DAsync.
std::optional<CopyCall> as_copy(const clang::CallExpr* call);

// The nearest for/while/do/range-for around `stmt` within its function.
const clang::Stmt* enclosing_loop(const clang::Stmt* stmt, clang::ASTContext& context);
// Does `stmt` (transitively, within the function) contain `inner`?
bool contains(const clang::Stmt* stmt, const clang::Stmt* inner);
// Calls visit on every statement under `stmt` (lambda bodies excluded: other functions).
void for_each_stmt(const clang::Stmt* stmt, const std::function<void(const clang::Stmt*)>& visit);
// Does the body call the CUDA runtime/driver API or launch a kernel? (a cheap
// filter before building a CFG)
bool uses_cuda(const clang::Stmt* body);
// Does expr mention the variable?
bool mentions(const clang::Stmt* stmt, const clang::ValueDecl* decl);

// The key stream_key gives a stream held in `variable` (a global, or a member used through this).
std::string stream_key(const clang::ValueDecl* variable);

}  // namespace gpudiag::lint
