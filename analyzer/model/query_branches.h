// What a branch on the result of cudaStreamQuery / cudaEventQuery tells: on
// the branch where the query said cudaSuccess (or anything but
// cudaErrorNotReady) the host has waited for what it asked about; on the
// other, for nothing. A polling loop that can leave before the work is done
// (`while (cudaStreamQuery(s) == cudaErrorNotReady && tries++ < 100)`, a
// `break` after a bounded number of polls) leaves by a branch that says
// nothing, so the work may still be running after it.
#pragma once

#include <map>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

#include "sync_model.h"

namespace gpudiag::lint {

// cudaStreamQuery, cudaEventQuery, cuStreamQuery, cuEventQuery.
bool is_query(const clang::CallExpr* call);
// The wait a query that reported its work done amounts to: a sync of its
// stream, or of its event.
SyncCall query_wait(const clang::CallExpr* query, const clang::ASTContext& context);

// Status variables and the queries the function assigns to them
// (`st = cudaStreamQuery(s)`, `cudaError_t st = cudaEventQuery(e)`).
using StatusQueries = std::map<const clang::ValueDecl*, std::vector<const clang::CallExpr*>>;
StatusQueries status_queries(const clang::Stmt* body);

// The queries that branch `taken` (true or false) of `condition` says
// reported their work done: `q == cudaSuccess` taken, `q != cudaErrorNotReady`
// taken, `q` (nonzero: not done) not taken, through `!`, `&&`, `||`, `?:`
// conditions, `(st = q)` and status variables. A test of a query it cannot
// read (a call on the status, another error code) counts as done: a missed
// finding is better than a false one.
std::vector<const clang::CallExpr*> queries_done_on(const clang::Expr* condition, bool taken,
                                                    const StatusQueries& status, clang::ASTContext& context);

}  // namespace gpudiag::lint
