// A small forward "may" dataflow over clang's CFG for the flow-sensitive
// checks (GD003, GD004, GD007): states are joined by union at merges, so a
// fact holds after a point when it holds on SOME path to it; that is what
// "on every path" bug-finding needs (one bad path is a bug).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <clang/Analysis/CFG.h>

namespace gpudiag::lint {

// The function's CFG with every sub-expression as its own element, in
// evaluation order; nullptr when the body cannot be built (e.g. dependent).
std::unique_ptr<clang::CFG> build_cfg(const clang::FunctionDecl& function, clang::ASTContext& context);

// The Edge of a dataflow whose branches tell nothing.
struct NoEdge {
  template <typename State>
  void operator()(const clang::CFGBlock&, unsigned, State&) const {}
};

// State must provide: bool join(const State&) (returns true when it changed).
// Visitor must provide: void operator()(const clang::Stmt*, State&, bool report).
// Edge: void operator()(const clang::CFGBlock& from, unsigned successor_index,
// State&) refines the state that leaves `from` along one branch (what the
// branch's condition tells).
// Runs to a fixed point, then replays every reachable block once with
// report = true (so each finding is made once), and returns the state that
// reaches the function's exit by falling off or returning (paths through a
// noreturn call such as exit() are left out).
template <typename State, typename Visitor, typename Edge>
std::optional<State> run_forward(const clang::CFG& cfg, const State& initial, Visitor&& visit, Edge&& edge) {
  const unsigned count = cfg.getNumBlockIDs();
  std::vector<std::optional<State>> in(count), out(count);
  std::deque<const clang::CFGBlock*> work;
  std::vector<bool> queued(count, false);
  in[cfg.getEntry().getBlockID()] = initial;
  work.push_back(&cfg.getEntry());
  queued[cfg.getEntry().getBlockID()] = true;
  auto apply = [&](const clang::CFGBlock& block, State& state, bool report) {
    for (const clang::CFGElement& element : block)
      if (auto stmt = element.getAs<clang::CFGStmt>()) visit(stmt->getStmt(), state, report);
  };
  // Loops converge quickly for set-valued states; the cap guards pathological graphs.
  for (size_t steps = 0; !work.empty() && steps < 64ull * count + 64; ++steps) {
    const clang::CFGBlock* block = work.front();
    work.pop_front();
    queued[block->getBlockID()] = false;
    State state = *in[block->getBlockID()];
    apply(*block, state, false);
    out[block->getBlockID()] = state;
    unsigned index = 0;
    for (const auto& succ : block->succs()) {
      const clang::CFGBlock* next = succ.getReachableBlock();
      const unsigned successor_index = index++;
      if (next == nullptr) continue;
      std::optional<State> refined;
      if constexpr (!std::is_same_v<std::decay_t<Edge>, NoEdge>) edge(*block, successor_index, refined.emplace(state));
      const State& along = refined ? *refined : state;
      auto& target = in[next->getBlockID()];
      bool changed = false;
      if (!target) {
        target = along;
        changed = true;
      } else {
        changed = target->join(along);
      }
      if (changed && !queued[next->getBlockID()]) {
        queued[next->getBlockID()] = true;
        work.push_back(next);
      }
    }
  }
  for (const clang::CFGBlock* block : cfg) {
    if (!in[block->getBlockID()]) continue;
    State state = *in[block->getBlockID()];
    apply(*block, state, true);
  }
  std::optional<State> exit;
  for (const auto& pred : cfg.getExit().preds()) {
    const clang::CFGBlock* block = pred.getReachableBlock();
    if (block == nullptr || block->hasNoReturnElement() || !out[block->getBlockID()]) continue;
    if (!exit) exit = *out[block->getBlockID()];
    else exit->join(*out[block->getBlockID()]);
  }
  return exit;
}

template <typename State, typename Visitor>
std::optional<State> run_forward(const clang::CFG& cfg, const State& initial, Visitor&& visit) {
  return run_forward(cfg, initial, std::forward<Visitor>(visit), NoEdge{});
}

}  // namespace gpudiag::lint
