// What the host has waited for when a CUDA call returns, and which streams
// such a wait covers (the legacy and per-thread default streams,
// non-blocking streams), after the CUDA docs' "API synchronization behavior"
// and "Stream synchronization behavior".
#pragma once

#include <functional>
#include <set>
#include <string>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

#include "cuda_model.h"

namespace gpudiag::lint {

// What the host has waited for when a call returns. Legacy: the legacy
// default stream (cudaStreamSynchronize(0) or a blocking cudaMemcpy without
// per-thread default streams): it waits for every blocking stream, not for
// streams created with cudaStreamNonBlocking.
enum class SyncKind { None, Device, Legacy, Stream, Event };
struct SyncCall {
  SyncKind kind = SyncKind::None;
  std::string key;                       // stream or event key
  const clang::Expr* handle = nullptr;   // the stream/event argument the key was read from
};
// Where a pointer's memory came from, when the caller knows (a blocking
// cudaMemcpyAsync into pageable memory is a stream sync).
using OriginLookup = std::function<const Origin*(const clang::Expr*)>;
// What a call of a function defined in the TU waits for, in the caller's
// terms, when the caller knows (sync_summaries.h reads it from the body).
using HelperSyncLookup = std::function<SyncCall(const clang::CallExpr*)>;
// The CUDA runtime/driver calls after the CUDA docs' "API synchronization
// behavior" (see the table in sync_model.cpp): cudaDeviceSynchronize,
// cudaStreamSynchronize(s), cudaEventSynchronize(e), blocking copies other
// than device-to-device, frees, cudaStream/EventQuery whose result is tested
// (a polling loop), and calls of functions defined in the TU whose body
// synchronises, as `helper_sync` tells (without it, such a call waits for
// nothing).
SyncCall as_sync(const clang::CallExpr* call, clang::ASTContext& context, const OriginLookup& origin_of = {},
                 const HelperSyncLookup& helper_sync = {});
// A wait for everything queued so far on stream `key` (Legacy for the legacy default stream).
SyncCall stream_sync(const std::string& key, const clang::ASTContext& context);

// Keys (as stream_key gives them) of the streams the body creates with
// cudaStreamNonBlocking (cudaStreamCreateWithFlags / WithPriority).
std::set<std::string> nonblocking_streams(const clang::Stmt* body);
// The variables (locals, globals, members) those streams are stored in.
std::set<const clang::ValueDecl*> nonblocking_stream_variables(const clang::Stmt* body);
// Does a sync of `kind` wait for work queued on `stream`?
bool sync_covers(SyncKind kind, const std::string& stream, const std::set<std::string>& nonblocking);
// Does `sync` wait for work queued on `stream` (events aside: what an event
// covers depends on where it was recorded)?
bool sync_covers(const SyncCall& sync, const std::string& stream, const std::set<std::string>& nonblocking);

}  // namespace gpudiag::lint
