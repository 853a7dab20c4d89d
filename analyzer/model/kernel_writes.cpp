// Stores through a kernel's pointer parameters, read from its body. Where the
// body does something with a parameter this does not follow, the parameter
// counts as written: GD003 then waits for the launch, which a correct
// program does anyway before it reads what the kernel was given.
#include "kernel_writes.h"

#include <functional>

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/Stmt.h>

#include "cuda_model.h"

namespace gpudiag::lint {
using namespace clang;

namespace {

// Callees nested deeper than this are not read: the parameter counts as written.
constexpr int kMaxDepth = 8;

using Aliases = std::set<const ValueDecl*>;

bool const_pointee(QualType type) {
  type = type.getNonReferenceType();
  if (const auto* pointer = type->getAs<PointerType>()) return pointer->getPointeeType().isConstQualified();
  return false;
}

// Every statement under `stmt`, lambda bodies included (a device lambda
// stores through what it captures); unevaluated operands left out.
void walk(const Stmt* stmt, const std::function<void(const Stmt*)>& visit) {
  if (stmt == nullptr || isa<UnaryExprOrTypeTraitExpr>(stmt)) return;
  visit(stmt);
  if (const auto* lambda = dyn_cast<LambdaExpr>(stmt)) {
    for (const Expr* init : lambda->capture_inits()) walk(init, visit);
    walk(lambda->getBody(), visit);
    return;
  }
  for (const Stmt* child : stmt->children()) walk(child, visit);
}

// Does the pointer value `expr` point into memory one of `aliases` points
// to? p, p + i, &p[i], (float4*)p, c ? p : q, and what a call given p returns.
bool based_on(const Expr* expr, const Aliases& aliases) {
  if (expr == nullptr) return false;
  if (const ValueDecl* base = pointer_base(expr); base != nullptr) return aliases.count(base) > 0;
  const Expr* bare = expr->IgnoreParenCasts();
  if (const auto* choice = dyn_cast<ConditionalOperator>(bare))
    return based_on(choice->getTrueExpr(), aliases) || based_on(choice->getFalseExpr(), aliases);
  if (const auto* call = dyn_cast<CallExpr>(bare); call && call->getType()->isPointerType() &&
                                                    !const_pointee(call->getType())) {
    for (const Expr* arg : call->arguments())
      if (based_on(arg, aliases)) return true;
  }
  return false;
}

// Is the lvalue `target` memory reached through one of `aliases`? p[i],
// *p, p->x, p[i].x, p->arr[j], and a reference bound to such memory.
bool through(const Expr* target, const Aliases& aliases) {
  const Expr* e = target;
  while (e != nullptr) {
    e = e->IgnoreParenImpCasts();
    if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(e)) {
      if (subscript->getBase()->getType()->isPointerType()) return based_on(subscript->getBase(), aliases);
      e = subscript->getBase();  // an array inside the element: p->rows[i]
    } else if (const auto* unary = dyn_cast<UnaryOperator>(e)) {
      return unary->getOpcode() == UO_Deref && based_on(unary->getSubExpr(), aliases);
    } else if (const auto* member = dyn_cast<MemberExpr>(e)) {
      if (member->isArrow()) return based_on(member->getBase(), aliases);
      e = member->getBase();
    } else if (const auto* ref = dyn_cast<DeclRefExpr>(e)) {
      return ref->getDecl()->getType()->isReferenceType() && aliases.count(ref->getDecl()) > 0;
    } else if (const auto* cast = dyn_cast<ExplicitCastExpr>(e)) {
      e = cast->getSubExpr();
    } else {
      return false;
    }
  }
  return false;
}

// Locals that point into (or refer to) the parameter's memory:
// float* row = p + i * n; row = p; float& x = p[i].
Aliases aliases_of(const ParmVarDecl& param, const Stmt* body) {
  Aliases aliases{&param};
  for (bool grew = true; grew;) {
    grew = false;
    walk(body, [&](const Stmt* stmt) {
      const VarDecl* var = nullptr;
      const Expr* value = nullptr;
      if (const auto* decl = dyn_cast<DeclStmt>(stmt)) {
        for (const Decl* d : decl->decls())
          if (const auto* v = dyn_cast<VarDecl>(d); v && v->getInit() != nullptr && !aliases.count(v)) {
            const QualType type = v->getType();
            if ((type->isPointerType() && based_on(v->getInit(), aliases)) ||
                (type->isReferenceType() && !type.getNonReferenceType().isConstQualified() &&
                 through(v->getInit(), aliases)))
              grew |= aliases.insert(v).second;
          }
        return;
      }
      if (const auto* assign = dyn_cast<BinaryOperator>(stmt); assign && assign->getOpcode() == BO_Assign) {
        if (const auto* ref = dyn_cast<DeclRefExpr>(assign->getLHS()->IgnoreParenImpCasts())) {
          var = dyn_cast<VarDecl>(ref->getDecl());
          value = assign->getRHS();
        }
      }
      if (var != nullptr && var->getType()->isPointerType() && !aliases.count(var) && based_on(value, aliases))
        grew |= aliases.insert(var).second;
    });
  }
  return aliases;
}

// Is `lhs` a local pointer variable of the function (where keeping a
// pointer is an alias, not an escape)?
bool local_pointer(const Expr* lhs) {
  const auto* ref = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts());
  const auto* var = ref != nullptr ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
  return var != nullptr && var->isLocalVarDeclOrParm() && var->getType()->isPointerType();
}

}  // namespace

ParamWrite KernelWrites::writes(const FunctionDecl* function, unsigned param) {
  if (function == nullptr || param >= function->getNumParams()) return ParamWrite::No;
  const QualType type = function->getParamDecl(param)->getType();
  if (!type->isPointerType() || const_pointee(type)) return ParamWrite::No;
  const FunctionDecl* definition = nullptr;
  if (!function->hasBody(definition) || definition == nullptr || definition->getBody() == nullptr)
    return ParamWrite::Assumed;
  return stores_through(*definition, *definition->getParamDecl(param), 0) ? ParamWrite::Yes : ParamWrite::No;
}

bool KernelWrites::stores_through(const FunctionDecl& definition, const ParmVarDecl& param, int depth) {
  const auto key = std::make_pair(&definition, param.getFunctionScopeIndex());
  if (auto it = done_.find(key); it != done_.end()) return it->second;
  if (in_progress_.count(key)) {
    cut_ = true;  // what the recursion stores, the outer call finds
    return false;
  }
  if (depth > kMaxDepth) return true;
  in_progress_.insert(key);
  const bool outer_cut = std::exchange(cut_, false);
  const Stmt* body = definition.getBody();
  const Aliases aliases = aliases_of(param, body);
  bool stores = false;
  walk(body, [&](const Stmt* stmt) {
    if (stores) return;
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->isAssignmentOp()) {
      // A store through it, or the pointer kept where this does not follow it (a struct, a global).
      stores = through(binary->getLHS(), aliases) ||
               (binary->getOpcode() == BO_Assign && binary->getRHS()->getType()->isPointerType() &&
                !const_pointee(binary->getRHS()->getType()) && based_on(binary->getRHS(), aliases) &&
                !local_pointer(binary->getLHS()));
    } else if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->isIncrementDecrementOp()) {
      stores = through(unary->getSubExpr(), aliases);
    } else if (const auto* call = dyn_cast<CallExpr>(stmt)) {
      stores = call_stores(*call, aliases, depth);
    } else if (const auto* construct = dyn_cast<CXXConstructExpr>(stmt)) {
      for (const Expr* arg : construct->arguments())
        if (arg->getType()->isPointerType() && !const_pointee(arg->getType()) && based_on(arg, aliases)) stores = true;
    } else if (const auto* list = dyn_cast<InitListExpr>(stmt)) {
      for (const Expr* init : list->inits())
        if (init->getType()->isPointerType() && !const_pointee(init->getType()) && based_on(init, aliases))
          stores = true;
    } else if (const auto* assembly = dyn_cast<AsmStmt>(stmt)) {
      for (const Stmt* operand : assembly->children())
        if (const auto* expr = dyn_cast_or_null<Expr>(operand); expr && (based_on(expr, aliases) || through(expr, aliases)))
          stores = true;
    }
  });
  in_progress_.erase(key);
  // A "no" that relied on a call still in progress is not final.
  if (stores || !cut_) done_[key] = stores;
  cut_ |= outer_cut;
  return stores;
}

bool KernelWrites::call_stores(const CallExpr& call, const Aliases& aliases, int depth) {
  const FunctionDecl* callee = call.getDirectCallee();
  // p->reset() or p[i].add(v): a non-const method may store into the object.
  if (const auto* member = dyn_cast<CXXMemberCallExpr>(&call)) {
    const Expr* object = member->getImplicitObjectArgument();
    const auto* method = member->getMethodDecl();
    if (object != nullptr && (through(object, aliases) || based_on(object, aliases)) &&
        (method == nullptr || !method->isConst()))
      return true;
  }
  // A method called as an operator has its object as argument 0.
  unsigned first_param_arg = 0;
  if (isa<CXXOperatorCallExpr>(call) && isa_and_nonnull<CXXMethodDecl>(callee)) {
    first_param_arg = 1;
    const auto* method = cast<CXXMethodDecl>(callee);
    if (call.getNumArgs() > 0 && through(call.getArg(0), aliases) && !method->isConst()) return true;
  }
  for (unsigned i = first_param_arg; i < call.getNumArgs(); ++i) {
    const Expr* arg = call.getArg(i);
    const unsigned index = i - first_param_arg;
    const bool has_param = callee != nullptr && index < callee->getNumParams();
    const QualType type = has_param ? callee->getParamDecl(index)->getType() : arg->IgnoreParenImpCasts()->getType();
    if (type->isReferenceType()) {
      // foo(p[i]) with a float& parameter.
      if (!type.getNonReferenceType().isConstQualified() && (through(arg, aliases) || based_on(arg, aliases)))
        return true;
      continue;
    }
    if (!type->isPointerType() || const_pointee(type) || !based_on(arg, aliases)) continue;
    const FunctionDecl* definition = nullptr;
    // A builtin (the atomics end in one), a function without a body here, or a call through a pointer.
    if (!has_param || !callee->hasBody(definition) || definition == nullptr || definition->getBody() == nullptr)
      return true;
    if (stores_through(*definition, *definition->getParamDecl(index), depth + 1)) return true;
  }
  return false;
}

namespace {

// The kernel an argument names: `fill`, `&fill`, `(const void*)fill`.
const FunctionDecl* kernel_named(const Expr* function) {
  if (function == nullptr) return nullptr;
  function = function->IgnoreParenCasts();
  if (const auto* address = dyn_cast<UnaryOperator>(function); address && address->getOpcode() == UO_AddrOf)
    function = address->getSubExpr()->IgnoreParenCasts();
  const auto* ref = dyn_cast<DeclRefExpr>(function);
  return ref != nullptr ? dyn_cast<FunctionDecl>(ref->getDecl()) : nullptr;
}

// The elements of a local `void* args[] = {&a, &n}` array, or nullopt.
std::optional<std::vector<const Expr*>> args_array(const Expr* array) {
  const auto* args = dyn_cast_or_null<VarDecl>(pointer_base(array));
  const auto* list = args != nullptr && args->getInit() != nullptr
                         ? dyn_cast<InitListExpr>(args->getInit()->IgnoreParenImpCasts())
                         : nullptr;
  if (list == nullptr) return std::nullopt;
  return std::vector<const Expr*>(list->inits().begin(), list->inits().end());
}

bool is_launch_ex(const std::string& name) { return name == "cudaLaunchKernelEx" || name == "cudaLaunchKernelExC"; }

// The stream of a cudaLaunchKernelEx's `&config`: the one value the function
// assigns to `config.stream`, else the initialiser's (`= {}`: the default
// stream, nullptr). nullopt when that is not known: no initialiser, two
// assignments, or the config handed to another function that may set it.
std::optional<const Expr*> config_stream(const Expr* config) {
  const auto* address = dyn_cast_or_null<UnaryOperator>(config ? config->IgnoreParenImpCasts() : nullptr);
  const auto* ref = address != nullptr && address->getOpcode() == UO_AddrOf
                        ? dyn_cast<DeclRefExpr>(address->getSubExpr()->IgnoreParenImpCasts())
                        : nullptr;
  const auto* variable = ref != nullptr ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
  const auto* function = variable != nullptr && variable->isLocalVarDecl()
                             ? dyn_cast_or_null<FunctionDecl>(variable->getParentFunctionOrMethod())
                             : nullptr;
  if (function == nullptr || function->getBody() == nullptr) return std::nullopt;
  const auto is_config = [&](const Expr* e) {
    const auto* r = dyn_cast<DeclRefExpr>(e->IgnoreParenImpCasts());
    return r != nullptr && r->getDecl() == variable;
  };
  std::vector<const Expr*> assigned;
  bool handed_on = false;
  for_each_stmt(function->getBody(), [&](const Stmt* stmt) {
    if (const auto* assign = dyn_cast<BinaryOperator>(stmt); assign && assign->getOpcode() == BO_Assign) {
      const auto* member = dyn_cast<MemberExpr>(assign->getLHS()->IgnoreParenImpCasts());
      if (member != nullptr && is_config(member->getBase()) && member->getMemberDecl()->getName() == "stream")
        assigned.push_back(assign->getRHS());
    } else if (const auto* call = dyn_cast<CallExpr>(stmt); call && !is_launch_ex(callee_name(call))) {
      for (const Expr* arg : call->arguments())
        if (const auto* taken = dyn_cast<UnaryOperator>(arg->IgnoreParenImpCasts());
            taken && taken->getOpcode() == UO_AddrOf && is_config(taken->getSubExpr()))
          handed_on = true;
    }
  });
  if (handed_on || assigned.size() > 1) return std::nullopt;
  if (assigned.size() == 1) return assigned.front();
  const auto* init = variable->getInit() ? dyn_cast<InitListExpr>(variable->getInit()->IgnoreParenImpCasts()) : nullptr;
  const auto* record = variable->getType()->getAsRecordDecl();
  if (init == nullptr || record == nullptr) return std::nullopt;
  unsigned index = 0;
  for (const FieldDecl* field : record->fields()) {
    if (field->getName() == "stream") {
      if (index >= init->getNumInits()) return nullptr;
      const Expr* value = init->getInit(index);
      return isa<ImplicitValueInitExpr>(value) ? nullptr : value;
    }
    ++index;
  }
  return std::nullopt;
}

}  // namespace

std::optional<LaunchArgs> launch_args(const CallExpr* call) {
  if (const auto* launch = dyn_cast_or_null<CUDAKernelCallExpr>(call)) {
    LaunchArgs out{launch->getDirectCallee(), {}, launch_stream(launch)};
    for (const Expr* arg : launch->arguments()) out.args.push_back(arg);
    return out;
  }
  const std::string name = callee_name(call);
  if (name == "cudaLaunchKernel" || name == "cudaLaunchCooperativeKernel") {
    // cudaLaunchKernel((void*)kernel, grid, block, args, shmem, stream).
    const FunctionDecl* kernel = kernel_named(call_arg(call, 0));
    auto args = args_array(call_arg(call, 3));
    if (kernel == nullptr || !args) return std::nullopt;
    return LaunchArgs{kernel, std::move(*args), call_arg(call, 5)};
  }
  if (is_launch_ex(name)) {
    // cudaLaunchKernelEx(&config, kernel, a, n), the template, or
    // cudaLaunchKernelExC(&config, (void*)kernel, args).
    const FunctionDecl* kernel = kernel_named(call_arg(call, 1));
    const std::optional<const Expr*> stream = config_stream(call_arg(call, 0));
    if (kernel == nullptr || !stream) return std::nullopt;
    if (name == "cudaLaunchKernelExC") {
      auto args = args_array(call_arg(call, 2));
      if (!args) return std::nullopt;
      return LaunchArgs{kernel, std::move(*args), *stream};
    }
    LaunchArgs out{kernel, {}, *stream};
    for (unsigned i = 2; i < call->getNumArgs(); ++i) out.args.push_back(call->getArg(i));
    return out;
  }
  return std::nullopt;
}

}  // namespace gpudiag::lint
