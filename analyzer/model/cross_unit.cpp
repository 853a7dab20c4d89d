#include "cross_unit.h"

#include <algorithm>

#include <clang/AST/GlobalDecl.h>
#include <llvm/Support/raw_ostream.h>

namespace gpudiag::lint {

CrossUnitCondition CrossUnitCondition::after_every_call_of(std::string function) {
  CrossUnitCondition condition;
  condition.after_calls_of.insert(std::move(function));
  return condition;
}

CrossUnitCondition& CrossUnitCondition::operator&=(const CrossUnitCondition& other) {
  never = never || other.never;
  if (never) after_calls_of.clear();
  else after_calls_of.insert(other.after_calls_of.begin(), other.after_calls_of.end());
  return *this;
}

void CrossUnitFacts::add_call(const std::string& fact, const std::string& callee, CrossUnitCondition condition) {
  std::lock_guard lock(mutex_);
  auto [after_all, first] = calls_[fact].try_emplace(callee, std::move(condition));
  if (!first) after_all->second &= condition;
}

bool CrossUnitFacts::holds(const std::string& fact, const CrossUnitCondition& condition) const {
  if (condition.never) return false;
  std::lock_guard lock(mutex_);
  std::map<std::string, std::optional<bool>> known;
  return std::all_of(condition.after_calls_of.begin(), condition.after_calls_of.end(),
                     [&](const std::string& function) { return holds_after_calls(fact, function, known); });
}

// `known` maps each function being settled to nothing, and each settled one
// to its answer: meeting a function still being settled is a cycle.
bool CrossUnitFacts::holds_after_calls(const std::string& fact, const std::string& function,
                                       std::map<std::string, std::optional<bool>>& known) const {
  auto [entry, inserted] = known.try_emplace(function);
  if (!inserted) return entry->second.value_or(false);
  bool result = false;
  if (auto by_fact = calls_.find(fact); by_fact != calls_.end())
    if (auto after = by_fact->second.find(function); after != by_fact->second.end())
      result = !after->second.never &&
               std::all_of(after->second.after_calls_of.begin(), after->second.after_calls_of.end(),
                           [&](const std::string& callee) { return holds_after_calls(fact, callee, known); });
  known[function] = result;
  return result;
}

std::optional<Finding> CrossUnitFacts::settle(const DeferredFinding& deferred) const {
  for (const auto& alternative : deferred.alternatives) {
    if (!holds(alternative.fact, alternative.condition)) continue;
    if (!alternative.message) return std::nullopt;
    Finding finding = deferred.finding;
    finding.message = *alternative.message;
    return finding;
  }
  if (!deferred.reported_when_none_holds) return std::nullopt;
  return deferred.finding;
}

std::string linkage_name(const clang::FunctionDecl& function, clang::MangleContext& mangler) {
  std::string name;
  llvm::raw_string_ostream out(name);
  if (mangler.shouldMangleDeclName(&function)) mangler.mangleName(clang::GlobalDecl(&function), out);
  else out << function.getName();
  return name;
}

}  // namespace gpudiag::lint
