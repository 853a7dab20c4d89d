// The check framework: one Check subclass per rule, registered under the
// name of its rule, which the catalogue (gpudiag/catalogue.h) gives its id;
// FunctionCheck for the rules that look at each function's shared facts.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <clang/ASTMatchers/ASTMatchFinder.h>

#include "cross_unit.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/finding.h"

namespace gpudiag::lint {

struct LintConfig;
class FunctionFacts;
class FunctionFactsCache;

// Where a check sends what it found; the sink applies suppressions, header
// filtering, severity overrides and de-duplication.
class FindingSink {
 public:
  virtual ~FindingSink() = default;
  virtual void add(Finding finding, clang::SourceLocation where, const clang::SourceManager& sm) = 0;
  // A finding that other translation units settle (cross_unit.h).
  virtual void add_deferred(DeferredFinding finding, clang::SourceLocation where, const clang::SourceManager& sm) = 0;
};

struct CheckInfo;

class Check : public clang::ast_matchers::MatchFinder::MatchCallback {
 public:
  // The rule it reports, as the catalogue has it; bound by CheckInfo::make.
  const Rule& rule() const { return *rule_; }
  std::string_view id() const { return rule_->id; }
  std::string_view name() const { return rule_->name; }

  // `functions` is shared by every check of a translation unit (see
  // function_facts.h), `cross_unit` by every unit of a run.
  void attach(FindingSink* sink, const LintConfig* config, FunctionFactsCache* functions, CrossUnitFacts* cross_unit) {
    sink_ = sink;
    config_ = config;
    functions_ = functions;
    cross_unit_ = cross_unit;
  }
  virtual void register_matchers(clang::ast_matchers::MatchFinder& finder) = 0;

 protected:
  // Starts a finding at `where` (the macro expansion site when in a macro).
  Finding make(const clang::SourceManager& sm, clang::SourceLocation where, std::string message) const;
  static void note(Finding& finding, const clang::SourceManager& sm, clang::SourceLocation where,
                   std::string message);
  void report(Finding finding, clang::SourceLocation where, const clang::SourceManager& sm);
  // Reported at once when this unit alone settles it.
  void report(DeferredFinding finding, clang::SourceLocation where, const clang::SourceManager& sm);
  const LintConfig& config() const { return *config_; }
  FunctionFactsCache& function_facts() const { return *functions_; }
  CrossUnitFacts& cross_unit_facts() const { return *cross_unit_; }

 private:
  friend struct CheckInfo;
  const Rule* rule_ = nullptr;
  FindingSink* sink_ = nullptr;
  const LintConfig* config_ = nullptr;
  FunctionFactsCache* functions_ = nullptr;
  CrossUnitFacts* cross_unit_ = nullptr;
};

// A check that looks at each user function (host code, or device code too
// when `with_device_code`) through the shared facts.
class FunctionCheck : public Check {
 public:
  explicit FunctionCheck(bool with_device_code = false) : with_device_code_(with_device_code) {}
  void register_matchers(clang::ast_matchers::MatchFinder& finder) final;
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) final;

 protected:
  virtual void check(const FunctionFacts& facts) = 0;

 private:
  bool with_device_code_;
};

// Function definitions outside system headers, bound to "function"; device-only
// code is left out unless `with_device_code`.
clang::ast_matchers::DeclarationMatcher user_functions(bool with_device_code = false);

SourceLocation to_location(const clang::SourceManager& sm, clang::SourceLocation where);

using CheckFactory = std::function<std::unique_ptr<Check>()>;

// A check as compiled in: the name of the rule it reports, nothing more.
struct CheckEntry {
  std::string_view rule_name;
  CheckFactory factory;
};

// A check bound to its rule of the catalogue.
struct CheckInfo {
  const Rule* rule;
  CheckFactory factory;

  std::string_view id() const { return rule->id; }
  std::string_view name() const { return rule->name; }
  // A new instance that reports `rule`.
  std::unique_ptr<Check> make() const;
};

// Binds each entry to the static rule of the catalogue that has its name,
// ordered by rule id. An entry that names no such rule, or the rule of an
// earlier entry, is left out, and `errors` gets a line that says why.
std::vector<CheckInfo> bind_checks(std::span<const CheckEntry> entries, std::vector<std::string>& errors);

// Every check compiled in, bound to its rule, ordered by rule id.
const std::vector<CheckInfo>& registered_checks();
// Why compiled-in checks were left out of registered_checks(), one line
// each: a build that gets one is broken, and gpulint refuses to run.
const std::vector<std::string>& check_registry_errors();

struct RegisterCheck {
  RegisterCheck(std::string_view rule_name, CheckFactory factory);
};

}  // namespace gpudiag::lint

// Registers `Class` as the check of the catalogue's rule `rule_name` (a
// string literal), which names its file too: checks/<rule-name>.cpp.
#define GPUDIAG_REGISTER_CHECK(Class, rule_name)                                                \
  static_assert(std::string_view(__FILE__).ends_with("/" rule_name ".cpp"),                    \
                "a check registers under its rule's name, its file's: checks/<rule-name>.cpp"); \
  static const ::gpudiag::lint::RegisterCheck gpudiag_register_##Class {                        \
    rule_name, [] { return std::unique_ptr<::gpudiag::lint::Check>(std::make_unique<Class>()); } \
  }
