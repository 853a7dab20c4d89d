// What one translation unit cannot settle alone. A launch helper defined in
// one file and called only from others is checked, or not, by its callers
// there. Each unit states what it knows of its calls of functions defined
// elsewhere, and reports findings that depend on the other units' calls as
// deferred; the runner settles them once every unit has been analysed.
// Functions are named by their linkage name, the same in every unit.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <clang/AST/Decl.h>
#include <clang/AST/Mangle.h>

#include "gpudiag/finding.h"

namespace gpudiag::lint {

// Whether a fact holds at some point: outright, never, or when it holds
// after every call, in any unit, of each function named.
struct CrossUnitCondition {
  bool never = false;
  std::set<std::string> after_calls_of;  // linkage names; all must hold

  static CrossUnitCondition always() { return {}; }
  static CrossUnitCondition none() { return {true, {}}; }
  static CrossUnitCondition after_every_call_of(std::string function);
  bool holds_outright() const { return !never && after_calls_of.empty(); }
  bool settled() const { return never || after_calls_of.empty(); }
  // Both hold.
  CrossUnitCondition& operator&=(const CrossUnitCondition& other);
};

// A finding whose text, or whether it is reported at all, depends on
// facts about calls in other units.
struct DeferredFinding {
  struct Alternative {
    std::string fact;
    CrossUnitCondition condition;
    std::optional<std::string> message;  // the finding's text instead; none: not reported
  };
  Finding finding;                        // as it stands when no alternative holds
  std::vector<Alternative> alternatives;  // the first that holds wins
  // False: reported only when an alternative with a message holds (a
  // finding that needs facts from other units to be true at all).
  bool reported_when_none_holds = true;
};

// The facts of a whole run; units add theirs from several threads.
class CrossUnitFacts {
 public:
  // After this call of `callee`, `fact` holds when `condition` does.
  void add_call(const std::string& fact, const std::string& callee, CrossUnitCondition condition);

  // Asked once every unit is in. A function no unit calls holds nothing,
  // and neither does a cycle of functions that wait on each other.
  bool holds(const std::string& fact, const CrossUnitCondition& condition) const;
  // The finding as it reads once settled; none when not reported.
  std::optional<Finding> settle(const DeferredFinding& deferred) const;

 private:
  bool holds_after_calls(const std::string& fact, const std::string& function,
                         std::map<std::string, std::optional<bool>>& known) const;

  mutable std::mutex mutex_;
  // fact → callee → what holds after all its calls: one condition per
  // callee, however many calls, so a large code base costs one entry per
  // function called across files.
  std::map<std::string, std::map<std::string, CrossUnitCondition>> calls_;
};

// The name the linker matches `function` by, the same in every unit that
// declares it, whatever the const or __restrict__ on its parameters there:
// its mangled name, or its plain name under extern "C".
std::string linkage_name(const clang::FunctionDecl& function, clang::MangleContext& mangler);

}  // namespace gpudiag::lint
