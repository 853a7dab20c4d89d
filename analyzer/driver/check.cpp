#include "check.h"

#include <algorithm>
#include <set>

#include <clang/Basic/SourceManager.h>

#include "function_facts.h"

namespace gpudiag::lint {
namespace {
// Filled before main, as each check's file registers it; the catalogue is
// asked only once main runs.
std::vector<CheckEntry>& entries() {
  static std::vector<CheckEntry> compiled_in;
  return compiled_in;
}

struct Registry {
  std::vector<CheckInfo> checks;
  std::vector<std::string> errors;
};

const Registry& registry() {
  static const Registry bound = [] {
    Registry registry;
    registry.checks = bind_checks(entries(), registry.errors);
    return registry;
  }();
  return bound;
}
}  // namespace

RegisterCheck::RegisterCheck(std::string_view rule_name, CheckFactory factory) {
  entries().push_back({rule_name, std::move(factory)});
}

std::unique_ptr<Check> CheckInfo::make() const {
  std::unique_ptr<Check> check = factory();
  check->rule_ = rule;
  return check;
}

std::vector<CheckInfo> bind_checks(std::span<const CheckEntry> entries, std::vector<std::string>& errors) {
  std::vector<CheckInfo> checks;
  std::set<std::string_view> seen;
  for (const CheckEntry& entry : entries) {
    const std::string name(entry.rule_name);
    // By its exact name: an id or another spelling would leave the check's
    // file and its rule's entry named apart.
    const Rule* rule = find_rule_named(entry.rule_name);
    if (rule == nullptr)
      errors.push_back("the check '" + name + "' names no rule of the catalogue (rules/" + name + ".md)");
    else if (!rule->is_static)
      errors.push_back("the check '" + name + "' reports rule " + std::string(rule->id) +
                       ", which the catalogue does not apply to static analysis (rules/" + name + ".md)");
    else if (!seen.insert(rule->name).second)
      errors.push_back("the rule '" + name + "' has two checks");
    else
      checks.push_back({rule, entry.factory});
  }
  std::sort(checks.begin(), checks.end(), [](const auto& a, const auto& b) { return a.rule->id < b.rule->id; });
  return checks;
}

const std::vector<CheckInfo>& registered_checks() { return registry().checks; }

const std::vector<std::string>& check_registry_errors() { return registry().errors; }

clang::ast_matchers::DeclarationMatcher user_functions(bool with_device_code) {
  using namespace clang::ast_matchers;
  if (with_device_code)
    return functionDecl(isDefinition(), unless(isImplicit()), unless(isExpansionInSystemHeader())).bind("function");
  return functionDecl(isDefinition(), unless(isImplicit()), unless(isExpansionInSystemHeader()),
                      unless(allOf(anyOf(hasAttr(clang::attr::CUDAGlobal), hasAttr(clang::attr::CUDADevice)),
                                   unless(hasAttr(clang::attr::CUDAHost)))))
      .bind("function");
}

SourceLocation to_location(const clang::SourceManager& sm, clang::SourceLocation where) {
  SourceLocation out;
  if (where.isInvalid()) return out;
  const clang::SourceLocation file_loc = sm.getFileLoc(where);
  const clang::PresumedLoc presumed = sm.getPresumedLoc(file_loc);
  if (presumed.isInvalid()) return out;
  out.file = presumed.getFilename();
  out.line = presumed.getLine();
  out.column = presumed.getColumn();
  return out;
}

Finding Check::make(const clang::SourceManager& sm, clang::SourceLocation where, std::string message) const {
  Finding finding;
  finding.rule_id = rule_->id;
  finding.message = std::move(message);
  finding.location = to_location(sm, where);
  return finding;
}

void Check::note(Finding& finding, const clang::SourceManager& sm, clang::SourceLocation where,
                 std::string message) {
  finding.notes.push_back(Note{std::move(message), to_location(sm, where), {}});
}

void Check::report(Finding finding, clang::SourceLocation where, const clang::SourceManager& sm) {
  if (sink_ != nullptr) sink_->add(std::move(finding), where, sm);
}

void Check::report(DeferredFinding finding, clang::SourceLocation where, const clang::SourceManager& sm) {
  const bool settled = std::all_of(finding.alternatives.begin(), finding.alternatives.end(),
                                   [](const auto& alternative) { return alternative.condition.settled(); });
  if (!settled) {
    if (sink_ != nullptr) sink_->add_deferred(std::move(finding), where, sm);
    return;
  }
  // Settled conditions ask nothing of other units: no facts are needed.
  if (auto settled_finding = CrossUnitFacts().settle(finding)) report(std::move(*settled_finding), where, sm);
}

void FunctionCheck::register_matchers(clang::ast_matchers::MatchFinder& finder) {
  finder.addMatcher(user_functions(with_device_code_), this);
}

void FunctionCheck::run(const clang::ast_matchers::MatchFinder::MatchResult& result) {
  const auto* function = result.Nodes.getNodeAs<clang::FunctionDecl>("function");
  if (function == nullptr || function->getBody() == nullptr) return;
  check(function_facts().get(*function, *result.Context));
}

}  // namespace gpudiag::lint
