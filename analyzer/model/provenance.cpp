#include "provenance.h"

#include "host_uses.h"
#include "pointer_origins.h"
#include "provenance_facts.h"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

namespace gpudiag::lint {
using namespace clang;

namespace {

// Rounds of the fixed point: each carries an origin one call (or field) further.
constexpr int kMaxRounds = 4;

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

namespace {

template <typename Key>
bool same_kinds(const std::map<Key, Origin>& a, const std::map<Key, Origin>& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.kind != j->second.kind) return false;
  return true;
}

}  // namespace

Provenance::Provenance(ASTContext& context) : context_(context), facts_(std::make_unique<ProvenanceFacts>()) {
  collect_provenance_facts(context, *facts_);
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
