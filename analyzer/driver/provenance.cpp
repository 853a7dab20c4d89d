#include "provenance.h"

#include "host_uses.h"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

namespace gpudiag::lint {
using namespace clang;

namespace {

// Rounds of the fixed point: each carries an origin one call (or field) further.
constexpr int kMaxRounds = 4;

const FunctionDecl* canonical(const FunctionDecl* function) {
  return function != nullptr ? function->getCanonicalDecl() : nullptr;
}

// T** out: a parameter through which the function hands memory back.
bool is_out_pointer(QualType type) { return type->isPointerType() && type->getPointeeType()->isPointerType(); }

// T*&: likewise, by reference.
bool is_pointer_reference(QualType type) {
  return type->isLValueReferenceType() && type.getNonReferenceType()->isPointerType() &&
         !type.getNonReferenceType().isConstQualified();
}

const FieldDecl* pointer_field(const Expr* expr) {
  const auto* member = dyn_cast_or_null<MemberExpr>(expr ? expr->IgnoreParenImpCasts() : nullptr);
  const auto* field = member ? dyn_cast<FieldDecl>(member->getMemberDecl()) : nullptr;
  return field != nullptr && field->getType()->isPointerType() ? field : nullptr;
}

// The parameter of `function` that `expr` names, when it is a T** parameter.
const ParmVarDecl* out_parameter(const Expr* expr, const FunctionDecl* function) {
  const auto* ref = dyn_cast_or_null<DeclRefExpr>(expr ? expr->IgnoreParenCasts() : nullptr);
  const auto* param = ref ? dyn_cast<ParmVarDecl>(ref->getDecl()) : nullptr;
  if (param == nullptr || function == nullptr || param->getDeclContext() != function) return nullptr;
  return is_out_pointer(param->getType()) ? param : nullptr;
}

// The callee's name as the call spells it, so a call is told apart from
// any other mention of the function (its address taken).
const Expr* callee_reference(const CallExpr* call) {
  const Expr* callee = call->getCallee();
  if (callee == nullptr || call->getDirectCallee() == nullptr) return nullptr;
  callee = callee->IgnoreParenImpCasts();
  if (const auto* ref = dyn_cast<DeclRefExpr>(callee); ref && ref->getDecl() == call->getDirectCallee()) return ref;
  if (const auto* member = dyn_cast<MemberExpr>(callee); member && member->getMemberDecl() == call->getDirectCallee())
    return member;
  return nullptr;
}

// Parameters are inferred from the callers only where every call is a plain
// call in the TU: not kernels (launched, device code), constructors,
// operators or virtual methods (called in ways the TU does not spell).
bool may_infer_parameters(const FunctionDecl* function) {
  if (is_device_or_global(function) && !function->hasAttr<CUDAHostAttr>()) return false;
  if (isa<CXXConstructorDecl, CXXDestructorDecl, CXXConversionDecl>(function) || function->isOverloadedOperator() ||
      function->isMain())
    return false;
  const auto* method = dyn_cast<CXXMethodDecl>(function);
  return method == nullptr || !method->isVirtual();
}

// Does the body give the parameter another value (p = q, &p), so that what it
// later points to is not what the caller passed?
bool reassigned(const ParmVarDecl* param, const Stmt* body) {
  bool found = false;
  for_each_stmt(body, [&](const Stmt* stmt) {
    const Expr* target = nullptr;
    if (const auto* binary = dyn_cast<BinaryOperator>(stmt); binary && binary->getOpcode() == BO_Assign)
      target = binary->getLHS();
    else if (const auto* unary = dyn_cast<UnaryOperator>(stmt); unary && unary->getOpcode() == UO_AddrOf)
      target = unary->getSubExpr();
    const auto* ref = dyn_cast_or_null<DeclRefExpr>(target ? target->IgnoreParenImpCasts() : nullptr);
    if (ref != nullptr && ref->getDecl() == param) found = true;
  });
  return found;
}

}  // namespace

struct ProvenanceFacts {
  // A value some statement stores into a summarised slot: a field, what a T**
  // parameter points to, or a function's result. Exactly one of `value`,
  // `allocation` and `through` is set; none means unknown.
  struct Store {
    const FunctionDecl* in = nullptr;   // whose variables `value` may name; nullptr in a lambda or initialiser
    const Expr* value = nullptr;
    std::optional<Origin> allocation = std::nullopt;  // cudaMalloc(&s->buf) and the like
    const CallExpr* through = nullptr;  // a call that stores through its argument `arg`
    unsigned arg = 0;
  };
  struct CallSite {
    const FunctionDecl* caller;
    const CallExpr* call;
  };

  // What the source says, collected once.
  std::vector<const FunctionDecl*> functions;  // definitions in user code, not dependent
  std::map<const FunctionDecl*, std::vector<CallSite>> calls;  // by canonical callee
  std::set<const FunctionDecl*> escaped;       // canonical: named other than by a call seen in a function
  std::map<const FunctionDecl*, std::vector<Store>> returns;  // by canonical function
  std::map<const ParmVarDecl*, std::vector<Store>> out_stores;
  std::map<const FieldDecl*, std::vector<Store>> field_stores;

  // The summaries of the current round.
  struct Summaries {
    std::map<const FunctionDecl*, Origin> returned;  // by canonical function
    std::map<const ParmVarDecl*, Origin> out;        // what *p (T**) or p (T*&) holds on return
    std::map<const ParmVarDecl*, Origin> parameters;
    std::map<const FieldDecl*, Origin> fields;
  } summaries;
  std::map<const FunctionDecl*, std::map<const ValueDecl*, Origin>> origins;  // by definition
};

namespace {

template <typename Key>
bool same_kinds(const std::map<Key, Origin>& a, const std::map<Key, Origin>& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.kind != j->second.kind) return false;
  return true;
}

// Collects the stores, calls and function references of the user's code.
class Collector : public RecursiveASTVisitor<Collector> {
  using Base = RecursiveASTVisitor<Collector>;
  using Store = ProvenanceFacts::Store;
  using CallSite = ProvenanceFacts::CallSite;

 public:
  Collector(ProvenanceFacts& facts, const SourceManager& sm) : facts_(facts), sm_(sm) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl* decl) {
    if (decl == nullptr) return true;
    if (decl->getLocation().isValid() && sm_.isInSystemHeader(sm_.getExpansionLoc(decl->getLocation()))) return true;
    const auto* function = dyn_cast<FunctionDecl>(decl);
    if (function == nullptr) return Base::TraverseDecl(decl);
    // A template's pattern says nothing definite; its instantiations are visited.
    if (function->isDependentContext()) return true;
    const bool defined = function->doesThisDeclarationHaveABody();
    if (defined) facts_.functions.push_back(function);
    stack_.push_back(defined ? function : nullptr);
    const bool result = Base::TraverseDecl(decl);
    stack_.pop_back();
    return result;
  }
  // A lambda body is another function, whose variables are not the enclosing one's.
  bool TraverseLambdaExpr(LambdaExpr* lambda) {
    stack_.push_back(nullptr);
    const bool result = Base::TraverseLambdaExpr(lambda);
    stack_.pop_back();
    return result;
  }
  bool TraverseConstructorInitializer(CXXCtorInitializer* init) {
    if (init != nullptr && init->isMemberInitializer())
      if (const FieldDecl* field = init->getMember(); field && field->getType()->isPointerType())
        facts_.field_stores[field].push_back(Store{current(), init->getInit()});
    return Base::TraverseConstructorInitializer(init);
  }

  bool VisitCallExpr(CallExpr* call) {
    on_call_stores(call);
    const FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) return true;
    if (const Expr* ref = callee_reference(call); ref && current() && !isa<CXXOperatorCallExpr>(call)) {
      facts_.calls[canonical(callee)].push_back(CallSite{current(), call});
      callee_references_.insert(ref);
    }
    return true;
  }
  // &s->buf kept or handed on other than to a call seen above, or a T*&
  // bound to it: the field may be assigned out of sight.
  bool VisitUnaryOperator(UnaryOperator* unary) {
    if (unary->getOpcode() != UO_AddrOf || stored_addresses_.count(unary)) return true;
    if (const FieldDecl* field = pointer_field(unary->getSubExpr()))
      facts_.field_stores[field].push_back(Store{current()});
    return true;
  }
  bool VisitVarDecl(VarDecl* var) {
    if (var->hasInit() && is_pointer_reference(var->getType()))
      if (const FieldDecl* field = pointer_field(var->getInit())) facts_.field_stores[field].push_back(Store{current()});
    return true;
  }
  bool VisitBinaryOperator(BinaryOperator* binary) {
    if (binary->getOpcode() != BO_Assign) return true;
    const Expr* target = binary->getLHS()->IgnoreParenImpCasts();
    if (const FieldDecl* field = pointer_field(target)) {
      facts_.field_stores[field].push_back(Store{current(), binary->getRHS()});
    } else if (const auto* unary = dyn_cast<UnaryOperator>(target); unary && unary->getOpcode() == UO_Deref) {
      if (const ParmVarDecl* param = out_parameter(unary->getSubExpr(), current()))
        facts_.out_stores[param].push_back(Store{current(), binary->getRHS()});
    } else if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(target)) {
      // pp[i] = ...: an array of pointers, not one pointer handed back.
      if (const ParmVarDecl* param = out_parameter(subscript->getBase(), current()))
        facts_.out_stores[param].push_back(Store{current()});
    }
    return true;
  }
  bool VisitReturnStmt(ReturnStmt* ret) {
    const FunctionDecl* function = current();
    if (function != nullptr && ret->getRetValue() != nullptr && function->getReturnType()->isPointerType())
      facts_.returns[canonical(function)].push_back(Store{function, ret->getRetValue()});
    return true;
  }
  // S s{ptr, ...}: aggregate initialisation stores into the fields.
  bool VisitInitListExpr(InitListExpr* list) {
    if (!list->isSemanticForm()) return true;
    const auto* record = list->getType()->getAsRecordDecl();
    if (record == nullptr || record->isUnion()) return true;
    unsigned index = 0;
    if (const auto* cxx = dyn_cast<CXXRecordDecl>(record); cxx && cxx->hasDefinition()) index = cxx->getNumBases();
    for (const FieldDecl* field : record->fields()) {
      if (field->isUnnamedBitField()) return true;  // not initialised: the indexes no longer line up
      if (index >= list->getNumInits()) break;
      const Expr* init = list->getInit(index++);
      if (field->getType()->isPointerType()) facts_.field_stores[field].push_back(Store{current(), init});
    }
    return true;
  }

  // Every mention of a function that is not the callee of a call seen above
  // (its address taken, a call from a lambda or an initialiser) means its
  // callers are not all known.
  bool VisitDeclRefExpr(DeclRefExpr* ref) {
    note_reference(ref, ref->getDecl());
    return true;
  }
  bool VisitMemberExpr(MemberExpr* member) {
    note_reference(member, member->getMemberDecl());
    return true;
  }
  bool VisitOverloadExpr(OverloadExpr* overload) {
    for (const NamedDecl* decl : overload->decls())
      if (const FunctionDecl* function = decl->getAsFunction()) facts_.escaped.insert(canonical(function));
    return true;
  }

 private:
  const FunctionDecl* current() const { return stack_.empty() ? nullptr : stack_.back(); }

  void note_reference(const Expr* ref, const ValueDecl* decl) {
    const auto* function = dyn_cast_or_null<FunctionDecl>(decl);
    if (function != nullptr && !callee_references_.count(ref)) facts_.escaped.insert(canonical(function));
  }

  // cudaMalloc(&s->buf), alloc(&s->buf), cudaMalloc(out) with out a T**
  // parameter, and a field bound to a T*& parameter.
  void on_call_stores(const CallExpr* call) {
    const std::string name = callee_name(call);
    const auto kind = allocation_kind(name);
    const FunctionDecl* callee = call->getDirectCallee();
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      if (call->getArg(i) == nullptr) continue;
      const Expr* arg = call->getArg(i)->IgnoreParenCasts();
      std::vector<Store>* slot = nullptr;
      if (const auto* unary = dyn_cast<UnaryOperator>(arg); unary && unary->getOpcode() == UO_AddrOf) {
        if (const FieldDecl* field = pointer_field(unary->getSubExpr())) {
          slot = &facts_.field_stores[field];
          stored_addresses_.insert(unary);
        }
      } else if (const ParmVarDecl* param = out_parameter(arg, current())) {
        slot = &facts_.out_stores[param];
      } else if (const FieldDecl* field = pointer_field(arg);
                 field && callee && !isa<CXXOperatorCallExpr>(call) && i < callee->getNumParams() &&
                 is_pointer_reference(callee->getParamDecl(i)->getType())) {
        slot = &facts_.field_stores[field];
      }
      if (slot == nullptr) continue;
      Store store{current()};
      if (kind && i == 0) store.allocation = Origin{*kind, call->getBeginLoc(), name};
      else {
        store.through = call;
        store.arg = i;
      }
      slot->push_back(std::move(store));
    }
  }

  ProvenanceFacts& facts_;
  const SourceManager& sm_;
  std::vector<const FunctionDecl*> stack_;
  std::set<const Expr*> callee_references_;
  std::set<const UnaryOperator*> stored_addresses_;
};

}  // namespace

Provenance::Provenance(ASTContext& context) : context_(context), facts_(std::make_unique<ProvenanceFacts>()) {
  Collector collector(*facts_, context.getSourceManager());
  collector.TraverseAST(context);
  summarise();
}

Provenance::~Provenance() = default;

namespace {

// What `value` makes of a pointer in `in`, with the summaries of `hints`;
// `self` is the field being stored to (s.buf = other.buf says nothing new).
ValueSource value_in(const Expr* value, const FunctionDecl* in, const FieldDecl* self, const Provenance& hints,
                     const std::map<const FunctionDecl*, std::map<const ValueDecl*, Origin>>& origins) {
  ValueSource source;
  const Expr* bare = value != nullptr ? value->IgnoreParenCasts() : nullptr;
  if (const auto* init = dyn_cast_or_null<CXXDefaultInitExpr>(bare)) bare = init->getExpr();
  bare = bare != nullptr ? bare->IgnoreParenCasts() : nullptr;
  if (bare == nullptr || isa<ImplicitValueInitExpr>(bare)) return source;
  if (self != nullptr && pointer_field(bare) == self) return source;
  source = classify_pointer_value(bare, &hints);
  if (!source.unknown || in == nullptr) return source;
  auto function = origins.find(in);
  if (function == origins.end()) return source;
  if (const ValueDecl* decl = pointer_base(bare)) {
    auto it = function->second.find(decl);
    if (it != function->second.end()) return ValueSource{false, it->second};
  }
  return source;
}

}  // namespace

void Provenance::summarise() {
  ProvenanceFacts& facts = *facts_;
  // A struct of a shared header may be filled differently in other
  // translation units: only the main file's are summarised.
  const SourceManager& sm = context_.getSourceManager();
  auto defined_in_main_file = [&](const RecordDecl* record) {
    return record != nullptr && sm.isInMainFile(sm.getExpansionLoc(record->getLocation()));
  };
  using Store = ProvenanceFacts::Store;
  auto join = [&](const std::vector<Store>& stores, const FieldDecl* self) -> std::optional<Origin> {
    std::optional<Origin> joined;
    for (const Store& store : stores) {
      ValueSource source;
      if (store.allocation) {
        source.origin = store.allocation;
      } else if (store.through != nullptr) {
        source.origin = stored(*store.through, store.arg);
        source.unknown = !source.origin;
      } else if (store.value != nullptr) {
        source = value_in(store.value, store.in, self, *this, facts.origins);
      } else {
        source.unknown = true;
      }
      if (source.unknown) return std::nullopt;
      if (!source.origin) continue;
      if (joined && joined->kind != source.origin->kind) return std::nullopt;
      if (!joined) joined = source.origin;
    }
    // What a function returns or a field holds is the memory itself, wherever it came from.
    if (joined) joined->from_callers = false;
    return joined;
  };

  for (int round = 0;; ++round) {
    // Device code is never checked against origins: its calls stay unknown.
    for (const FunctionDecl* function : facts.functions)
      if (!is_device_only(function)) facts.origins[function] = pointer_origins(*function, this);
    if (round == kMaxRounds) break;

    ProvenanceFacts::Summaries next;
    for (const auto& [function, stores] : facts.returns)
      if (auto origin = join(stores, nullptr)) next.returned.emplace(function, *origin);
    for (const auto& [param, stores] : facts.out_stores)
      if (auto origin = join(stores, nullptr)) next.out.emplace(param, *origin);
    for (const auto& [field, stores] : facts.field_stores)
      if (defined_in_main_file(field->getParent()))
        if (auto origin = join(stores, field)) next.fields.emplace(field, *origin);
    for (const FunctionDecl* function : facts.functions) {
      if (auto origins = facts.origins.find(function); origins != facts.origins.end())
        for (const ParmVarDecl* param : function->parameters())
          if (is_pointer_reference(param->getType()))
            if (auto it = origins->second.find(param); it != origins->second.end()) next.out.emplace(param, it->second);
      auto calls = facts.calls.find(canonical(function));
      if (calls == facts.calls.end() || facts.escaped.count(canonical(function)) || !may_infer_parameters(function))
        continue;
      for (unsigned i = 0; i < function->getNumParams(); ++i) {
        const ParmVarDecl* param = function->getParamDecl(i);
        if (!param->getType()->isPointerType()) continue;
        std::optional<Origin> joined;
        bool agree = true;
        for (const ProvenanceFacts::CallSite& site : calls->second) {
          const Expr* arg = call_arg(site.call, i);
          ValueSource source = arg ? value_in(arg, site.caller, nullptr, *this, facts.origins) : ValueSource{true, {}};
          if (source.unknown || (joined && source.origin && joined->kind != source.origin->kind)) agree = false;
          if (!agree) break;
          if (!joined) joined = source.origin;
        }
        if (!agree || !joined) continue;
        joined->from_callers = true;
        next.parameters.emplace(param, *joined);
      }
    }
    const bool done = same_kinds(next.returned, facts.summaries.returned) && same_kinds(next.out, facts.summaries.out) &&
                      same_kinds(next.parameters, facts.summaries.parameters) &&
                      same_kinds(next.fields, facts.summaries.fields);
    if (done) break;
    facts.summaries = std::move(next);
  }
}

std::optional<Origin> Provenance::returned(const CallExpr& call) const {
  const auto& returned = facts_->summaries.returned;
  auto it = returned.find(canonical(call.getDirectCallee()));
  if (it == returned.end()) return std::nullopt;
  Origin origin = it->second;
  origin.how += " returned by '" + call.getDirectCallee()->getNameAsString() + "'";
  return origin;
}

std::optional<Origin> Provenance::stored(const CallExpr& call, unsigned arg) const {
  const FunctionDecl* callee = call.getDirectCallee();
  const FunctionDecl* definition = callee != nullptr ? callee->getDefinition() : nullptr;
  if (definition == nullptr || isa<CXXOperatorCallExpr>(call) || arg >= definition->getNumParams()) return std::nullopt;
  const auto& out = facts_->summaries.out;
  auto it = out.find(definition->getParamDecl(arg));
  if (it == out.end()) return std::nullopt;
  Origin origin = it->second;
  origin.how += " in '" + definition->getNameAsString() + "'";
  return origin;
}

std::optional<Origin> Provenance::parameter(const ParmVarDecl& param) const {
  const auto& parameters = facts_->summaries.parameters;
  auto it = parameters.find(&param);
  if (it == parameters.end()) return std::nullopt;
  return it->second;
}

const Origin* Provenance::field_origin(const FieldDecl& field) const {
  const auto& fields = facts_->summaries.fields;
  auto it = fields.find(&field);
  return it == fields.end() ? nullptr : &it->second;
}

std::optional<Origin> Provenance::field(const FieldDecl& field) const {
  const Origin* origin = field_origin(field);
  return origin != nullptr ? std::optional<Origin>(*origin) : std::nullopt;
}

const std::map<const ValueDecl*, Origin>* Provenance::origins(const FunctionDecl& function) const {
  auto it = facts_->origins.find(&function);
  return it == facts_->origins.end() ? nullptr : &it->second;
}

const Provenance::Effects* Provenance::effects(const FunctionDecl* callee, unsigned param) const {
  const FunctionDecl* definition = callee != nullptr ? callee->getDefinition() : nullptr;
  if (definition == nullptr || param >= definition->getNumParams() || is_device_only(definition)) return nullptr;
  const ParmVarDecl* parameter = definition->getParamDecl(param);
  if (!parameter->getType()->isPointerType()) return nullptr;
  return &effects_of(parameter);
}

const Provenance::Effects& Provenance::effects_of(const ParmVarDecl* param) const {
  static const Effects kNone;
  auto [it, inserted] = effects_.try_emplace(param);
  if (!inserted) return it->second ? *it->second : kNone;  // recursion: what is known so far
  Effects found;
  const auto* function = dyn_cast<FunctionDecl>(param->getDeclContext());
  const Stmt* body = function != nullptr ? function->getBody() : nullptr;
  if (body != nullptr && !reassigned(param, body)) {
    std::set<const Stmt*> written;  // p[i] in `file << p[i]`: a file write, not a dereference to report
    for_each_stmt(body, [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr) return;
      if (const Expr* buffer = file_write_buffer(call)) {
        if (pointer_base(buffer) == param && !found.file_write) found.file_write = ParamUse{call, function};
        return;
      }
      if (const Expr* value = file_stream_insert(call)) {
        const Expr* bare = value->IgnoreParenImpCasts();
        const Expr* pointer = nullptr;
        if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(bare)) pointer = subscript->getBase();
        if (const auto* unary = dyn_cast<UnaryOperator>(bare); unary && unary->getOpcode() == UO_Deref)
          pointer = unary->getSubExpr();
        if (pointer != nullptr && pointer_base(pointer) == param) {
          written.insert(bare);
          if (!found.file_write) found.file_write = ParamUse{call, function};
        }
        return;
      }
      if (isa<CXXOperatorCallExpr>(call)) return;
      for (unsigned i = 0; i < call->getNumArgs(); ++i) {
        if (pointer_base(call->getArg(i)) != param) continue;
        const Effects* further = effects(call->getDirectCallee(), i);
        if (further == nullptr) continue;
        if (!found.file_write) found.file_write = further->file_write;
        if (!found.host_dereference) found.host_dereference = further->host_dereference;
      }
    });
    for_each_host_dereference(body, [&](const Stmt* access, const Expr* pointer) {
      if (!found.host_dereference && !written.count(access) && pointer_base(pointer) == param)
        found.host_dereference = ParamUse{access, function};
    });
  }
  auto& slot = effects_[param];
  slot = std::make_unique<Effects>(std::move(found));
  return *slot;
}

const ParamUse* Provenance::writes_to_file(const CallExpr& call, unsigned arg) const {
  if (isa<CXXOperatorCallExpr>(call)) return nullptr;
  const Effects* found = effects(call.getDirectCallee(), arg);
  return found != nullptr && found->file_write ? &*found->file_write : nullptr;
}

const ParamUse* Provenance::dereferences_on_host(const CallExpr& call, unsigned arg) const {
  if (isa<CXXOperatorCallExpr>(call)) return nullptr;
  const Effects* found = effects(call.getDirectCallee(), arg);
  return found != nullptr && found->host_dereference ? &*found->host_dereference : nullptr;
}

}  // namespace gpudiag::lint
