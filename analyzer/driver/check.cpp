#include "check.h"

#include <algorithm>

#include <clang/Basic/SourceManager.h>

#include "function_facts.h"

namespace gpudiag::lint {
namespace {
std::vector<CheckInfo>& registry() {
  static std::vector<CheckInfo> checks;
  return checks;
}
}  // namespace

RegisterCheck::RegisterCheck(std::string_view id, std::string_view name, CheckFactory make) {
  registry().push_back({std::string(id), std::string(name), std::move(make)});
}

std::vector<CheckInfo> registered_checks() {
  auto checks = registry();
  std::sort(checks.begin(), checks.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return checks;
}

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
  finding.rule_id = id_;
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
