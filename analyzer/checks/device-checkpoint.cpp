// GD012 device-checkpoint: device memory written to a file (fwrite, write,
// std::ostream::write) instead of a host copy of it: cudaMalloc'd buffers,
// also when handed to a function of the file that writes that parameter to a
// file (model/provenance.h), and the data_ptr() of gdrt tensors moved to a
// GPU device, or of the parameters and buffers of a gdrt module moved there
// (a loop over model.named_parameters() after model.to(device)). Saving a gdrt tensor
// or model with save_safetensors/save_checkpoint is fine from any device:
// gdrt copies to the host and the file records no device.
#include <optional>

#include <clang/AST/ExprCXX.h>
#include <clang/Lex/Lexer.h>

#include "check.h"
#include "cuda_model.h"
#include "function_facts.h"
#include "provenance.h"

namespace gpudiag::lint {
namespace {
using namespace clang;

class DeviceCheckpoint : public FunctionCheck {
 protected:
  void check(const FunctionFacts& facts) override {
    const SourceManager& sm = facts.source_manager();
    for_each_stmt(facts.function().getBody(), [&](const Stmt* stmt) {
      const auto* call = dyn_cast<CallExpr>(stmt);
      if (call == nullptr) return;
      const Expr* data = file_write_buffer(call);
      if (data == nullptr) return passed_to_writer(call, facts);
      if (const auto* placed = tensor_on_device(data, facts)) return report_tensor(call, *placed, sm);
      const ValueDecl* decl = nullptr;
      const Origin* origin = facts.origin_of(data, &decl);
      // Memory every caller passes is reported at the callers (passed_to_writer).
      if (origin == nullptr || origin->kind != MemKind::Device || origin->from_callers) return;
      Finding finding = make(sm, call->getBeginLoc(),
                             "device memory '" + decl->getNameAsString() + "' is written to a file; the host cannot "
                             "read device pointers, so the checkpoint holds garbage (or the program faults). Copy "
                             "it to a host buffer with cudaMemcpy(..., cudaMemcpyDeviceToHost) and write that");
      note(finding, sm, origin->where, "allocated as device memory (" + origin->how + ") here");
      report(std::move(finding), call->getBeginLoc(), sm);
    });
  }

 private:
  // A gdrt tensor's data_ptr() whose tensor was moved with .to(device) to a
  // device that is not plainly the CPU: the pointer is device memory there.
  struct PlacedTensor {
    std::string name;       // the tensor variable, or the moved expression
    const Expr* device;     // the .to() argument
    const Expr* move;       // the .to() call
    std::string module;     // the module whose parameter or buffer it is, if it is one
  };
  std::optional<PlacedTensor> placed_;

  static bool is_tensor(QualType type) {
    const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
    if (record == nullptr || !record->getDeclName().isIdentifier() || record->getName() != "Tensor") return false;
    const auto* ns = dyn_cast<NamespaceDecl>(record->getDeclContext()->getRedeclContext());
    return ns != nullptr && ns->getName() == "gdrt";
  }

  // x.to(device) with the Device overload: the device argument, else nullptr.
  static const CXXMemberCallExpr* device_move(const Expr* expr) {
    const auto* call = dyn_cast_or_null<CXXMemberCallExpr>(expr ? expr->IgnoreParenImpCasts() : nullptr);
    if (call == nullptr || callee_name(call) != "to" || call->getNumArgs() != 1 || !is_tensor(call->getType()))
      return nullptr;
    const auto* device_type = call->getArg(0)->getType().getNonReferenceType()->getAsCXXRecordDecl();
    if (device_type == nullptr || !device_type->getDeclName().isIdentifier() || device_type->getName() != "Device")
      return nullptr;
    return call;
  }

  // gdrt::nn::Module or a class derived from it.
  static bool is_module(QualType type) {
    const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
    if (record == nullptr || !record->hasDefinition()) return false;
    auto module = [](const CXXRecordDecl* r) {
      if (!r->getDeclName().isIdentifier() || r->getName() != "Module") return false;
      const auto* nn = dyn_cast<NamespaceDecl>(r->getDeclContext()->getRedeclContext());
      const auto* gdrt = nn ? dyn_cast<NamespaceDecl>(nn->getDeclContext()->getRedeclContext()) : nullptr;
      return nn != nullptr && nn->getName() == "nn" && gdrt != nullptr && gdrt->getName() == "gdrt";
    };
    record = record->getDefinition();
    return module(record) || !record->forallBases([&](const CXXRecordDecl* base) { return !module(base); });
  }

  // cpu_device(), Device{} / Device() or Device::parse("cpu"): certainly the host.
  static bool plainly_cpu(const Expr* device) {
    const Expr* bare = device;
    for (;;) {
      bare = bare->IgnoreParenCasts();
      if (const auto* temporary = dyn_cast<MaterializeTemporaryExpr>(bare)) {
        bare = temporary->getSubExpr();
      } else if (const auto* bind = dyn_cast<CXXBindTemporaryExpr>(bare)) {
        bare = bind->getSubExpr();
      } else if (const auto* construct = dyn_cast<CXXConstructExpr>(bare)) {
        if (construct->getNumArgs() == 0) return true;
        bare = construct->getArg(0);
      } else {
        break;
      }
    }
    if (const auto* list = dyn_cast<InitListExpr>(bare)) {
      // Device{} (every member at its default, kind = cpu).
      for (const Expr* init : list->inits())
        if (!isa<CXXDefaultInitExpr, ImplicitValueInitExpr>(init)) return false;
      return true;
    }
    if (isa<CXXScalarValueInitExpr>(bare)) return true;
    if (const auto* call = dyn_cast<CallExpr>(bare)) {
      const std::string name = callee_name(call);
      if (name == "cpu_device") return true;
      if (name == "parse" && call->getNumArgs() == 1)
        if (const auto* text = dyn_cast<StringLiteral>(call->getArg(0)->IgnoreParenImpCasts()))
          return text->getString() == "cpu";
    }
    return false;
  }

  // A parameter or buffer of a module that this function moves to a device
  // that is not plainly the CPU (and never to the CPU): the loop variable of
  // `for (... : m.named_parameters() / parameters() / named_buffers() /
  // state_dict())`, a structured binding of it or its `.second`.
  std::optional<PlacedTensor> module_tensor(const Expr* object, const FunctionFacts& facts) const {
    object = object->IgnoreParenImpCasts();
    if (const auto* member = dyn_cast<MemberExpr>(object);
        member && member->getMemberDecl()->getDeclName().isIdentifier() && member->getMemberDecl()->getName() == "second")
      object = member->getBase()->IgnoreParenImpCasts();
    const auto* ref = dyn_cast<DeclRefExpr>(object);
    if (ref == nullptr) return std::nullopt;
    const ValueDecl* loop_variable = ref->getDecl();
    if (const auto* binding = dyn_cast<BindingDecl>(loop_variable)) loop_variable = binding->getDecomposedDecl();
    const Stmt* body = facts.function().getBody();
    const CXXMemberCallExpr* range = nullptr;
    for_each_stmt(body, [&](const Stmt* stmt) {
      const auto* loop = dyn_cast<CXXForRangeStmt>(stmt);
      if (loop == nullptr || loop->getLoopVariable() != loop_variable || loop->getRangeInit() == nullptr) return;
      const auto* call = dyn_cast<CXXMemberCallExpr>(loop->getRangeInit()->IgnoreImplicit());
      if (call == nullptr || call->getImplicitObjectArgument() == nullptr ||
          !is_module(call->getImplicitObjectArgument()->getType()))
        return;
      const std::string name = callee_name(call);
      if (name == "named_parameters" || name == "parameters" || name == "named_buffers" || name == "state_dict")
        range = call;
    });
    if (range == nullptr) return std::nullopt;
    const auto* module_ref = dyn_cast<DeclRefExpr>(range->getImplicitObjectArgument()->IgnoreParenImpCasts());
    if (module_ref == nullptr) return std::nullopt;
    std::optional<PlacedTensor> placed;
    bool to_cpu = false;
    for_each_stmt(body, [&](const Stmt* stmt) {
      const auto* move = dyn_cast<CXXMemberCallExpr>(stmt);
      if (move == nullptr || callee_name(move) != "to" || move->getNumArgs() != 1 ||
          move->getImplicitObjectArgument() == nullptr)
        return;
      const auto* moved = dyn_cast<DeclRefExpr>(move->getImplicitObjectArgument()->IgnoreParenImpCasts());
      const auto* device_type = move->getArg(0)->getType().getNonReferenceType()->getAsCXXRecordDecl();
      if (moved == nullptr || moved->getDecl() != module_ref->getDecl() || device_type == nullptr ||
          !device_type->getDeclName().isIdentifier() || device_type->getName() != "Device")
        return;
      if (plainly_cpu(move->getArg(0))) to_cpu = true;
      else if (!placed)
        placed = PlacedTensor{ref->getDecl()->getNameAsString(), move->getArg(0), move,
                              module_ref->getDecl()->getNameAsString()};
    });
    if (to_cpu) return std::nullopt;
    return placed;
  }

  // The tensor whose data_ptr() `data` is, when it is on a (possibly) GPU device.
  const PlacedTensor* tensor_on_device(const Expr* data, const FunctionFacts& facts) {
    const Expr* bare = data->IgnoreParenCasts();
    while (const auto* cast = dyn_cast<ExplicitCastExpr>(bare)) bare = cast->getSubExpr()->IgnoreParenCasts();
    const auto* call = dyn_cast<CXXMemberCallExpr>(bare);
    if (call == nullptr || callee_name(call) != "data_ptr") return nullptr;
    const Expr* object = call->getImplicitObjectArgument();
    if (object == nullptr || !is_tensor(object->getType())) return nullptr;
    placed_ = module_tensor(object, facts);
    if (placed_) return &*placed_;
    if (const auto* move = device_move(object)) {
      if (!plainly_cpu(move->getArg(0))) placed_ = PlacedTensor{"the moved tensor", move->getArg(0), move, ""};
    } else if (const auto* ref = dyn_cast<DeclRefExpr>(object->IgnoreParenImpCasts())) {
      // Every value the variable is given in this function must be a move to a device.
      const ValueDecl* var = ref->getDecl();
      bool other = false;
      auto consider = [&](const Expr* value) {
        const auto* move = device_move(value);
        if (move == nullptr || plainly_cpu(move->getArg(0))) other = true;
        else if (!placed_) placed_ = PlacedTensor{var->getNameAsString(), move->getArg(0), move, ""};
      };
      if (const auto* local = dyn_cast<VarDecl>(var); local && local->hasInit()) consider(local->getInit());
      for_each_stmt(facts.function().getBody(), [&](const Stmt* stmt) {
        if (const auto* assign = dyn_cast<CXXOperatorCallExpr>(stmt);
            assign && assign->getOperator() == OO_Equal && assign->getNumArgs() == 2)
          if (const auto* lhs = dyn_cast<DeclRefExpr>(assign->getArg(0)->IgnoreParenImpCasts()); lhs && lhs->getDecl() == var)
            consider(assign->getArg(1));
      });
      if (other) placed_.reset();
    }
    return placed_ ? &*placed_ : nullptr;
  }

  void report_tensor(const CallExpr* write, const PlacedTensor& placed, const SourceManager& sm) {
    const std::string device = Lexer::getSourceText(CharSourceRange::getTokenRange(placed.device->getSourceRange()), sm,
                                                    LangOptions()).str();
    const std::string what = placed.name == "the moved tensor" ? placed.name : "tensor '" + placed.name + "'";
    const std::string moved = placed.module.empty()
                                  ? "the tensor was moved with .to(" + device + ")"
                                  : "it belongs to '" + placed.module + "', which was moved with " + placed.module +
                                        ".to(" + device + ")";
    Finding finding = make(sm, write->getBeginLoc(),
                           "the data of " + what + " is written to a file, but " + moved +
                               ", which may be a GPU; there data_ptr() is device memory, so the file gets garbage "
                               "(or the write faults). Move it first with .to(gdrt::cpu_device()), or save it with "
                               "gdrt::save_safetensors / gdrt::save_checkpoint, which copy to the host");
    note(finding, sm, placed.move->getBeginLoc(),
         (placed.module.empty() ? std::string("moved") : "'" + placed.module + "' moved") + " to '" + device + "' here");
    report(std::move(finding), write->getBeginLoc(), sm);
  }

  // Device memory handed to a function of the file that writes that
  // parameter to a file, itself or further down.
  void passed_to_writer(const CallExpr* call, const FunctionFacts& facts) {
    const Provenance* provenance = facts.provenance();
    if (provenance == nullptr) return;
    const SourceManager& sm = facts.source_manager();
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const Expr* arg = call->getArg(i);
      if (!arg->IgnoreParenImpCasts()->getType()->isPointerType()) continue;
      const Origin* origin = facts.origin_of(arg);
      if (origin == nullptr || origin->kind != MemKind::Device || origin->from_callers) continue;
      const ParamUse* write = provenance->writes_to_file(*call, i);
      if (write == nullptr) continue;
      Finding finding = make(sm, arg->getBeginLoc(),
                             "device memory '" + pointer_name(arg) + "' is passed to '" +
                                 call->getDirectCallee()->getNameAsString() +
                                 "', which writes it to a file; the host cannot read device pointers, so the "
                                 "file holds garbage (or the program faults). Copy it to a host buffer with "
                                 "cudaMemcpy(..., cudaMemcpyDeviceToHost) and pass that");
      note(finding, sm, write->where->getBeginLoc(), "written to a file here, in '" + write->in->getNameAsString() + "'");
      note(finding, sm, origin->where, "allocated as device memory (" + origin->how + ") here");
      report(std::move(finding), arg->getBeginLoc(), sm);
    }
  }
};

GPUDIAG_REGISTER_CHECK(DeviceCheckpoint, "device-checkpoint");

}  // namespace
}  // namespace gpudiag::lint
