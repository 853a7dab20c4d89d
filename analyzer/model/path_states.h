// A forward dataflow over clang's CFG that keeps paths apart: each block
// holds a small set of path states instead of one joined state, and every
// branch edge may refine (or rule out) a path from the block's condition.
// That is what per-path claims need (GD007: "this allocation succeeded on
// this path and reaches an exit unfreed") where flow.h's joined "may" state
// cannot tell the paths apart.
#pragma once

#include <algorithm>
#include <deque>
#include <vector>

#include <clang/Analysis/CFG.h>

namespace gpudiag::lint {

// Path must provide: bool operator==(const Path&) and void absorb(const Path&),
// which folds another path into this one conservatively (used only when a
// block holds more than `max_paths`).
// Visitor: void operator()(const clang::Stmt*, Path&).
// Edge: bool operator()(const clang::CFGBlock& from, unsigned successor_index, Path&):
// refines the path for that edge; false when the edge cannot be taken on it.
// Returns the paths that reach the function's exit by falling off or
// returning; paths through a noreturn call (exit(), abort()) are dropped.
template <typename Path, typename Visitor, typename Edge>
std::vector<Path> run_paths(const clang::CFG& cfg, const Path& initial, size_t max_paths, Visitor&& visit,
                            Edge&& edge) {
  const unsigned count = cfg.getNumBlockIDs();
  std::vector<std::vector<Path>> in(count);
  std::vector<bool> queued(count, false);
  std::deque<const clang::CFGBlock*> work;
  auto add = [&](const clang::CFGBlock& block, Path path) {
    auto& paths = in[block.getBlockID()];
    if (std::find(paths.begin(), paths.end(), path) != paths.end()) return;
    if (paths.size() < max_paths) {
      paths.push_back(std::move(path));
    } else {
      Path folded = paths.back();
      folded.absorb(path);
      if (folded == paths.back()) return;
      paths.back() = std::move(folded);
    }
    if (!queued[block.getBlockID()]) {
      queued[block.getBlockID()] = true;
      work.push_back(&block);
    }
  };
  add(cfg.getEntry(), initial);
  // Paths converge quickly for set-valued states; the cap guards pathological graphs.
  for (size_t steps = 0; !work.empty() && steps < 64ull * count + 64; ++steps) {
    const clang::CFGBlock* block = work.front();
    work.pop_front();
    queued[block->getBlockID()] = false;
    if (block == &cfg.getExit() || block->hasNoReturnElement()) continue;
    const std::vector<Path> paths = in[block->getBlockID()];
    for (Path path : paths) {
      for (const clang::CFGElement& element : *block)
        if (auto stmt = element.getAs<clang::CFGStmt>()) visit(stmt->getStmt(), path);
      unsigned index = 0;
      for (const auto& succ : block->succs()) {
        const clang::CFGBlock* next = succ.getReachableBlock();
        if (next != nullptr) {
          Path taken = path;
          if (edge(*block, index, taken)) add(*next, std::move(taken));
        }
        ++index;
      }
    }
  }
  return in[cfg.getExit().getBlockID()];
}

}  // namespace gpudiag::lint
