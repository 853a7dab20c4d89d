// The check framework: one Check subclass per rule, registered by name;
// FunctionCheck for the rules that look at each function's shared facts.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <clang/ASTMatchers/ASTMatchFinder.h>

#include "cross_unit.h"
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

class Check : public clang::ast_matchers::MatchFinder::MatchCallback {
 public:
  Check(std::string_view id, std::string_view name) : id_(id), name_(name) {}
  std::string_view id() const { return id_; }
  std::string_view name() const { return name_; }

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
  std::string id_;
  std::string name_;
  FindingSink* sink_ = nullptr;
  const LintConfig* config_ = nullptr;
  FunctionFactsCache* functions_ = nullptr;
  CrossUnitFacts* cross_unit_ = nullptr;
};

// A check that looks at each user function (host code, or device code too
// when `with_device_code`) through the shared facts.
class FunctionCheck : public Check {
 public:
  FunctionCheck(std::string_view id, std::string_view name, bool with_device_code = false)
      : Check(id, name), with_device_code_(with_device_code) {}
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
struct CheckInfo {
  std::string id;
  std::string name;
  CheckFactory make;
};

// Every check compiled in, ordered by rule id.
std::vector<CheckInfo> registered_checks();

struct RegisterCheck {
  RegisterCheck(std::string_view id, std::string_view name, CheckFactory make);
};

}  // namespace gpudiag::lint

#define GPUDIAG_REGISTER_CHECK(Class, id, name)                                             \
  static const ::gpudiag::lint::RegisterCheck gpudiag_register_##Class {                     \
    id, name, [] { return std::unique_ptr<::gpudiag::lint::Check>(std::make_unique<Class>()); } \
  }
