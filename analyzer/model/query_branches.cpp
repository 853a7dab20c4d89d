#include "query_branches.h"

#include <cstdint>
#include <optional>

#include <clang/AST/Stmt.h>

#include "cuda_model.h"

namespace gpudiag::lint {
using namespace clang;

namespace {

// cudaErrorNotReady and CUDA_ERROR_NOT_READY.
constexpr int64_t kNotReady = 600;

enum class Verdict { No, Done };

struct Reader {
  const StatusQueries& status;
  ASTContext& context;
  std::vector<const CallExpr*> done;

  // The queries whose result `expr` is: the call, (st = call), a status variable.
  std::vector<const CallExpr*> queries_of(const Expr* expr) const {
    expr = expr->IgnoreParenCasts();
    if (const auto* call = dyn_cast<CallExpr>(expr); call && is_query(call)) return {call};
    if (const auto* assign = dyn_cast<BinaryOperator>(expr); assign && assign->getOpcode() == BO_Assign)
      return queries_of(assign->getRHS());
    if (const auto* ref = dyn_cast<DeclRefExpr>(expr))
      if (auto it = status.find(ref->getDecl()); it != status.end()) return it->second;
    return {};
  }

  // Every query `expr` mentions, for a test this cannot read.
  void mentioned(const Stmt* stmt, std::vector<const CallExpr*>& out) const {
    if (stmt == nullptr) return;
    if (const auto* expr = dyn_cast<Expr>(stmt)) {
      const auto queries = queries_of(expr);
      if (!queries.empty()) {
        out.insert(out.end(), queries.begin(), queries.end());
        return;
      }
    }
    for (const Stmt* child : stmt->children()) mentioned(child, out);
  }

  std::optional<int64_t> constant(const Expr* expr) const {
    Expr::EvalResult value;
    if (expr->isValueDependent() || !expr->EvaluateAsInt(value, context)) return std::nullopt;
    return value.Val.getInt().getExtValue();
  }

  // Does `expr` evaluating to `taken` say its queries found the work done?
  // Those that did go to `done`.
  Verdict read(const Expr* expr, bool taken) {
    expr = expr->IgnoreParenCasts();
    if (const auto* unary = dyn_cast<UnaryOperator>(expr); unary && unary->getOpcode() == UO_LNot)
      return read(unary->getSubExpr(), !taken);
    if (const auto* binary = dyn_cast<BinaryOperator>(expr)) {
      const BinaryOperatorKind op = binary->getOpcode();
      // a && b taken: both hold; a || b not taken: neither holds. The other
      // way round, which one decided is not known.
      if ((op == BO_LAnd && taken) || (op == BO_LOr && !taken)) {
        const Verdict left = read(binary->getLHS(), taken);
        const Verdict right = read(binary->getRHS(), taken);
        return left == Verdict::Done || right == Verdict::Done ? Verdict::Done : Verdict::No;
      }
      if (op == BO_LAnd || op == BO_LOr) return Verdict::No;
      if (op == BO_EQ || op == BO_NE) {
        const Expr* query_side = binary->getLHS();
        const Expr* other = binary->getRHS();
        auto queries = queries_of(query_side);
        if (queries.empty()) {
          std::swap(query_side, other);
          queries = queries_of(query_side);
        }
        if (queries.empty()) return unread(expr);
        const auto code = constant(other);
        if (!code) return unread(expr);
        const bool equal = (op == BO_EQ) == taken;
        bool is_done = true;  // another error code: counted as done (missed rather than false)
        if (*code == 0) is_done = equal;
        else if (*code == kNotReady) is_done = !equal;
        else if (equal) is_done = false;  // == cudaErrorInvalidResourceHandle: not done
        if (!is_done) return Verdict::No;
        done.insert(done.end(), queries.begin(), queries.end());
        return Verdict::Done;
      }
      if (op == BO_Assign) {
        // if (st = cudaStreamQuery(s)): nonzero means not done.
        const auto queries = queries_of(expr);
        if (queries.empty()) return unread(expr);
        if (taken) return Verdict::No;
        done.insert(done.end(), queries.begin(), queries.end());
        return Verdict::Done;
      }
    }
    if (const auto queries = queries_of(expr); !queries.empty()) {
      // The status as a truth value: nonzero is an error or not ready.
      if (taken) return Verdict::No;
      done.insert(done.end(), queries.begin(), queries.end());
      return Verdict::Done;
    }
    return unread(expr);
  }

  Verdict unread(const Expr* expr) {
    std::vector<const CallExpr*> queries;
    mentioned(expr, queries);
    if (queries.empty()) return Verdict::No;
    done.insert(done.end(), queries.begin(), queries.end());
    return Verdict::Done;
  }
};

}  // namespace

bool is_query(const CallExpr* call) {
  const std::string name = callee_name(call);
  return name == "cudaStreamQuery" || name == "cudaEventQuery" || name == "cuStreamQuery" || name == "cuEventQuery";
}

SyncCall query_wait(const CallExpr* query, const ASTContext& context) {
  const std::string name = callee_name(query);
  const Expr* handle = call_arg(query, 0);
  if (name == "cudaEventQuery" || name == "cuEventQuery") return {SyncKind::Event, stream_key(handle, context), handle};
  SyncCall sync = stream_sync(stream_key(handle, context), context);
  sync.handle = handle;
  return sync;
}

StatusQueries status_queries(const Stmt* body) {
  StatusQueries out;
  auto query = [](const Expr* value) -> const CallExpr* {
    const auto* call = value != nullptr ? dyn_cast<CallExpr>(value->IgnoreParenCasts()) : nullptr;
    return call != nullptr && is_query(call) ? call : nullptr;
  };
  for_each_stmt(body, [&](const Stmt* stmt) {
    if (const auto* assign = dyn_cast<BinaryOperator>(stmt); assign && assign->getOpcode() == BO_Assign) {
      const auto* ref = dyn_cast<DeclRefExpr>(assign->getLHS()->IgnoreParenImpCasts());
      if (const CallExpr* call = query(assign->getRHS()); call && ref) out[ref->getDecl()].push_back(call);
    } else if (const auto* decl = dyn_cast<DeclStmt>(stmt)) {
      for (const Decl* d : decl->decls())
        if (const auto* var = dyn_cast<VarDecl>(d))
          if (const CallExpr* call = query(var->getInit())) out[var].push_back(call);
    }
  });
  return out;
}

std::vector<const CallExpr*> queries_done_on(const Expr* condition, bool taken, const StatusQueries& status,
                                             ASTContext& context) {
  if (condition == nullptr) return {};
  Reader reader{status, context, {}};
  reader.read(condition, taken);
  return std::move(reader.done);
}

}  // namespace gpudiag::lint
