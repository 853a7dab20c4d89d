// GD002 float64-leak: double arithmetic inside __global__/__device__ code
// that otherwise computes in float (double literals, double variables, calls
// that resolve to the double overload: the resolved callee is judged, not
// its name, so exp(float) is fine), and double host data copied into float
// device buffers.
//
// One pass is enough: clang's host-side AST keeps the bodies of device
// functions with their overloads resolved by the CUDA target rules, so no
// device (--cuda-device-only) pass is run.
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/Lex/Lexer.h>

#include "check.h"
#include "cuda_model.h"

namespace gpudiag::lint {
namespace {
using namespace clang;
using namespace clang::ast_matchers;

bool is_double(QualType type) {
  return type->isSpecificBuiltinType(BuiltinType::Double) || type->isSpecificBuiltinType(BuiltinType::LongDouble);
}
bool is_float(QualType type) {
  type = type.getNonReferenceType();
  while (type->isPointerType() || type->isArrayType())
    type = type->isPointerType() ? type->getPointeeType() : QualType(type->getArrayElementTypeNoTypeQual(), 0);
  if (type->isSpecificBuiltinType(BuiltinType::Float) || type->isHalfType() || type->isFloat16Type()) return true;
  const auto* record = type->getAsRecordDecl();
  if (record == nullptr || !record->getDeclName().isIdentifier()) return false;
  const std::string name = record->getName().str();
  return name == "float2" || name == "float3" || name == "float4" || name == "__half" || name == "__half2" ||
         name == "__nv_bfloat16" || name == "__nv_bfloat162";
}
bool is_double_like(QualType type) {
  type = type.getNonReferenceType();
  while (type->isPointerType()) type = type->getPointeeType();
  return is_double(type);
}

class Float64Leak : public Check {
 public:
  void register_matchers(MatchFinder& finder) override {
    finder.addMatcher(functionDecl(isDefinition(), unless(isExpansionInSystemHeader()), unless(isImplicit()),
                                   anyOf(hasAttr(attr::CUDAGlobal), hasAttr(attr::CUDADevice)),
                                   unless(isTemplateInstantiation()))
                          .bind("device"),
                      this);
    finder.addMatcher(callExpr(unless(isExpansionInSystemHeader()),
                               callee(functionDecl(hasAnyName("cudaMemcpy", "cudaMemcpyAsync"))))
                          .bind("copy"),
                      this);
  }

  void run(const MatchFinder::MatchResult& result) override {
    context_ = result.Context;
    if (const auto* call = result.Nodes.getNodeAs<CallExpr>("copy")) return check_copy(call);
    const auto* function = result.Nodes.getNodeAs<FunctionDecl>("device");
    if (function->isDependentContext() || !computes_in_float(*function) || has_double_params(*function)) return;
    function_ = function;
    for_each_stmt(function->getBody(), [&](const Stmt* stmt) { visit(stmt); });
  }

 private:
  const SourceManager& sm() const { return context_->getSourceManager(); }

  static bool has_double_params(const FunctionDecl& function) {
    // A function that takes doubles computes in double on purpose (e.g. a DGEMM).
    for (const ParmVarDecl* param : function.parameters())
      if (is_double_like(param->getType())) return true;
    // A return type deduced from the body (a lambda, `auto`) is double
    // because of the body's doubles, `(x == 0.0f) * 1e-20` included: no intent.
    return is_double(function.getReturnType()) && function.getDeclaredReturnType()->getContainedAutoType() == nullptr;
  }

  bool computes_in_float(const FunctionDecl& function) const {
    for (const ParmVarDecl* param : function.parameters())
      if (is_float(param->getType())) return true;
    bool found = false;
    for_each_stmt(function.getBody(), [&](const Stmt* stmt) {
      if (const auto* decl_stmt = dyn_cast<DeclStmt>(stmt))
        for (const Decl* decl : decl_stmt->decls())
          if (const auto* var = dyn_cast<VarDecl>(decl); var && is_float(var->getType())) found = true;
    });
    return found;
  }

  const Stmt* parent_of(const Stmt* stmt) const {
    auto parents = context_->getParents(*stmt);
    return parents.empty() ? nullptr : parents[0].get<Stmt>();
  }

  // Arguments of variadic calls (printf) are promoted to double by the language.
  bool in_variadic_call(const Stmt* stmt) const {
    for (const Stmt* parent = parent_of(stmt); parent != nullptr; parent = parent_of(parent)) {
      if (const auto* call = dyn_cast<CallExpr>(parent))
        if (const FunctionDecl* callee = call->getDirectCallee(); callee && callee->isVariadic()) return true;
      if (isa<CompoundStmt>(parent)) return false;
    }
    return false;
  }

  void emit(const Stmt* where, std::string message) {
    report(make(sm(), where->getBeginLoc(), std::move(message)), where->getBeginLoc(), sm());
  }

  void visit(const Stmt* stmt) {
    if (const auto* literal = dyn_cast<FloatingLiteral>(stmt)) {
      if (!is_double(literal->getType())) return;
      const Stmt* parent = parent_of(literal);
      while (parent && isa<ParenExpr>(parent)) parent = parent_of(parent);
      const auto* arithmetic = dyn_cast_or_null<BinaryOperator>(parent);
      if (arithmetic == nullptr || (!is_double(arithmetic->getType()) && !arithmetic->isCompoundAssignmentOp())) return;
      if (arithmetic->isEvaluatable(*context_) || in_variadic_call(literal)) return;  // folded at compile time
      const std::string text =
          Lexer::getSourceText(CharSourceRange::getTokenRange(literal->getSourceRange()), sm(),
                               context_->getLangOpts())
              .str();
      emit(literal, "double literal " + text + " makes this float arithmetic run in double precision (up to 64x "
                    "slower on consumer GPUs); write it as a float literal (" + text + "f)");
      return;
    }
    if (const auto* call = dyn_cast<CallExpr>(stmt); call && !isa<CUDAKernelCallExpr>(call)) {
      const FunctionDecl* callee = call->getDirectCallee();
      if (callee == nullptr || callee->isVariadic() || !is_double(call->getType()) || in_variadic_call(call)) return;
      if (parent_of(call) && isa<ExplicitCastExpr>(parent_of(call))) return;
      if (device_pass_may_differ(*call)) return;
      emit(call, "the call resolves to the double overload '" + callee->getQualifiedNameAsString() +
                     "(double)' in float code; pass a float argument or call the float version (e.g. expf, "
                     "sqrtf, __expf)");
      return;
    }
    if (const auto* decl_stmt = dyn_cast<DeclStmt>(stmt)) {
      for (const Decl* decl : decl_stmt->decls())
        if (const auto* var = dyn_cast<VarDecl>(decl); var && is_double(var->getType()) && !var->isConstexpr())
          report(make(sm(), var->getLocation(),
                      "double variable '" + var->getNameAsString() + "' in a kernel that computes in float: "
                      "every operation on it runs in double precision; declare it float"),
                 var->getLocation(), sm());
    }
  }

  // In __host__ __device__ code the host pass resolves overloads among host
  // functions: fabs(x) with a float x takes C's fabs(double) when the float
  // overload is __device__ (CUDA helper headers include <math.h> only outside
  // nvcc). The device pass takes that float overload, so only a call with no
  // device-callable float overload for its float arguments is double there too.
  bool device_pass_may_differ(const CallExpr& call) const {
    if (function_ == nullptr || !function_->hasAttr<CUDAHostAttr>() || !function_->hasAttr<CUDADeviceAttr>())
      return false;
    const FunctionDecl* callee = call.getDirectCallee();
    if (callee == nullptr || !callee->getDeclName().isIdentifier() || call.getNumArgs() == 0) return false;
    for (const Expr* arg : call.arguments())
      if (!arg->IgnoreParenImpCasts()->getType()->isSpecificBuiltinType(BuiltinType::Float)) return false;
    auto float_overload = [&](const NamedDecl* decl) {
      const auto* candidate = dyn_cast_or_null<FunctionDecl>(decl ? decl->getUnderlyingDecl() : nullptr);
      if (candidate == nullptr || candidate->getNumParams() != call.getNumArgs() ||
          !(candidate->hasAttr<CUDADeviceAttr>() || candidate->isConstexpr()))
        return false;
      for (const ParmVarDecl* param : candidate->parameters())
        if (!param->getType()->isSpecificBuiltinType(BuiltinType::Float)) return false;
      return true;
    };
    const DeclContext* scopes[] = {callee->getDeclContext()->getRedeclContext(),
                                   context_->getTranslationUnitDecl()};
    for (const DeclContext* scope : scopes)
      for (const NamedDecl* decl : scope->lookup(callee->getDeclName()))
        if (float_overload(decl)) return true;
    return false;
  }

  void check_copy(const CallExpr* call) {
    if (call->getNumArgs() < 2) return;
    const QualType dst = call->getArg(0)->IgnoreParenImpCasts()->getType();
    const QualType src = call->getArg(1)->IgnoreParenImpCasts()->getType();
    if (!dst->isPointerType() || !src->isPointerType()) return;
    const bool narrowing = is_float(dst->getPointeeType()) && is_double(src->getPointeeType());
    const bool widening = is_double(dst->getPointeeType()) && is_float(src->getPointeeType());
    if (!narrowing && !widening) return;
    emit(call, std::string(narrowing ? "double data is copied into a float buffer"
                                     : "float data is copied into a double buffer") +
                   ": cudaMemcpy copies bytes, it does not convert, so the values are garbage and the byte count "
                   "covers a different number of elements. Convert on the host first (std::vector<float>(begin, "
                   "end)) and copy the converted buffer");
  }

  ASTContext* context_ = nullptr;
  const FunctionDecl* function_ = nullptr;  // the device function being visited
};

GPUDIAG_REGISTER_CHECK(Float64Leak, "float64-leak");

}  // namespace
}  // namespace gpudiag::lint
