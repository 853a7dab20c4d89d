#include "runner.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include <clang/AST/ASTConsumer.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Tooling/Tooling.h>

#include "check.h"
#include "function_facts.h"
#include "gpudiag/catalogue.h"
#include "shared_preamble.h"
#include "suppress.h"

namespace gpudiag::lint {
namespace {

// Keeps the first error of a translation unit: its parse health.
class ParseHealth : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level >= clang::DiagnosticsEngine::Error && is_preamble_failure(info.getID())) preamble_failed = true;
    if (level < clang::DiagnosticsEngine::Error || !first_error.message.empty()) return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    first_error.message = text.str().str();
    if (info.hasSourceManager() && info.getLocation().isValid())
      first_error.location = to_location(info.getSourceManager(), info.getLocation());
  }
  Note first_error;
  bool preamble_failed = false;  // the shared preamble could not be used: the file is parsed again without
};

// What one translation unit found: its findings in report order, and those
// the other units settle, each with the number of findings before it.
struct UnitFindings {
  std::vector<Finding> findings;
  std::vector<std::pair<size_t, DeferredFinding>> deferred;

  // Every finding in report order, the deferred ones as `facts` settle them.
  std::vector<Finding> settled(const CrossUnitFacts& facts) && {
    std::vector<Finding> out;
    out.reserve(findings.size() + deferred.size());
    size_t next = 0;
    for (auto& [position, finding] : deferred) {
      for (; next < position; ++next) out.push_back(std::move(findings[next]));
      if (auto settled_finding = facts.settle(finding)) out.push_back(std::move(*settled_finding));
    }
    for (; next < findings.size(); ++next) out.push_back(std::move(findings[next]));
    return out;
  }
};

class Sink : public FindingSink {
 public:
  Sink(const LintConfig& config, UnitFindings& out) : config_(config), out_(out) {
    if (config.header_filter && !config.header_filter->empty()) header_filter_.emplace(*config.header_filter);
  }
  void add(Finding finding, clang::SourceLocation where, const clang::SourceManager& sm) override {
    if (admit(finding, where, sm)) out_.findings.push_back(std::move(finding));
  }
  void add_deferred(DeferredFinding deferred, clang::SourceLocation where, const clang::SourceManager& sm) override {
    if (admit(deferred.finding, where, sm)) out_.deferred.emplace_back(out_.findings.size(), std::move(deferred));
  }

 private:
  // Applies header filtering, suppressions and the configured severity;
  // false when the finding is not reported.
  bool admit(Finding& finding, clang::SourceLocation where, const clang::SourceManager& sm) const {
    const clang::SourceLocation file_loc = sm.getFileLoc(where);
    if (file_loc.isInvalid() || sm.isInSystemHeader(file_loc)) return false;
    if (!sm.isInMainFile(file_loc) &&
        (!header_filter_ || !std::regex_search(finding.location.file, *header_filter_)))
      return false;
    const Rule* rule = find_rule(finding.rule_id);
    const std::string name = rule ? std::string(rule->name) : finding.rule_id;
    bool invalid = false;
    llvm::StringRef buffer = sm.getBufferData(sm.getFileID(file_loc), &invalid);
    if (!invalid && is_suppressed(std::string_view(buffer.data(), buffer.size()), finding.location.line,
                                  finding.rule_id, name))
      return false;
    finding.severity = rule ? rule->severity : Severity::Warning;
    for (const auto& key : {finding.rule_id, name}) {
      auto it = config_.severity.find(key);
      if (it != config_.severity.end()) finding.severity = it->second;
    }
    return true;
  }

  const LintConfig& config_;
  UnitFindings& out_;
  std::optional<std::regex> header_filter_;
};

class LintConsumer : public clang::ASTConsumer {
 public:
  LintConsumer(const LintConfig& config, const std::string& cli_checks, UnitFindings& out, CrossUnitFacts& cross_unit,
               const bool& discarded)
      : sink_(config, out), discarded_(discarded) {
    for (const auto& info : registered_checks()) {
      if (!check_enabled(config.checks, info.id(), info.name()) || !check_enabled(cli_checks, info.id(), info.name()))
        continue;
      checks_.push_back(info.make());
      checks_.back()->attach(&sink_, &config, &functions_, &cross_unit);
      checks_.back()->register_matchers(finder_);
    }
  }
  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (discarded_) return;  // parsed again without the preamble; its facts must not count twice
    // Nothing is reported inside system headers, so the matchers (and the
    // parent map some checks ask for) only walk the user's own declarations:
    // the CUDA and standard headers are most of every translation unit.
    // Those of a shared preamble stay unread (noload_decls): it holds only
    // system headers and gpulint's own declarations.
    const clang::SourceManager& sm = context.getSourceManager();
    std::vector<clang::Decl*> user_decls;
    for (clang::Decl* decl : context.getTranslationUnitDecl()->noload_decls()) {
      const clang::SourceLocation where = decl->getLocation();
      if (!decl->isFromASTFile() && where.isValid() && !sm.isInSystemHeader(sm.getExpansionLoc(where)))
        user_decls.push_back(decl);
    }
    context.setTraversalScope(user_decls);
    finder_.matchAST(context);
  }

 private:
  Sink sink_;
  const bool& discarded_;
  FunctionFactsCache functions_;
  std::vector<std::unique_ptr<Check>> checks_;
  clang::ast_matchers::MatchFinder finder_;
};

class LintAction : public clang::ASTFrontendAction {
 public:
  LintAction(const LintConfig& config, const std::string& cli_checks, UnitFindings& out, CrossUnitFacts& cross_unit,
             const bool& discarded)
      : config_(config), cli_checks_(cli_checks), out_(out), cross_unit_(cross_unit), discarded_(discarded) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<LintConsumer>(config_, cli_checks_, out_, cross_unit_, discarded_);
  }

 private:
  const LintConfig& config_;
  const std::string& cli_checks_;
  UnitFindings& out_;
  CrossUnitFacts& cross_unit_;
  const bool& discarded_;
};

constexpr std::string_view kParseErrorRule = "clang-diagnostic-error";

// As clang-tidy reports it: clang's first error, where clang put it. An error
// fails the run, so a broken compile command cannot pass for a clean file; a
// note (AllowParseErrors) does not.
Finding parse_failure(const std::string& file, const Note& first_error, unsigned errors, bool allowed) {
  Finding finding;
  finding.rule_id = kParseErrorRule;
  finding.severity = allowed ? Severity::Note : Severity::Error;
  finding.location = first_error.location.known() ? first_error.location : SourceLocation{file, 0, 0};
  finding.message = first_error.message;
  // At the file that failed: the error may be in a header it includes.
  finding.notes.push_back(Note{"this file did not parse cleanly (" + std::to_string(errors) + " error" +
                                   (errors == 1 ? "" : "s") +
                                   "); the checks ran on what parsed, so findings may be missing; fix its compile "
                                   "command (-p BUILD_DIR, ExtraArgs in .gpulint.yaml)",
                               SourceLocation{file, 0, 0},
                               {}});
  return finding;
}

// clang 19's CUDA host view lacks declarations nvcc's host pass has (cache-hint
// intrinsics, host min/max, CUDA 12 signatures, headers nvcc includes
// implicitly); code written for nvcc parses once they are force-included.
// "" when the compat folder lacks it.
std::string nvcc_host_view(const ToolPaths& paths) {
  if (paths.compat_dir.empty()) return {};
  const std::string header = (std::filesystem::path(paths.compat_dir) / "nvcc_host_view.h").string();
  std::error_code ec;
  return std::filesystem::exists(header, ec) ? header : std::string();
}

// The clang argv item is parsed with, source last. Only CUDA compiles get
// the host view: translate_command marks those --cuda-host-only.
std::vector<std::string> command_for(const WorkItem& item, const LintConfig& config, const RunOptions& options,
                                     const std::string& host_view) {
  std::vector<std::string> argv = item.command.empty()
                                      ? default_command(item.file, options.paths, config.extra_args)
                                      : translate_command(item.command, item.file, options.paths, config.extra_args);
  if (!host_view.empty() && std::find(argv.begin(), argv.end(), "--cuda-host-only") != argv.end())
    argv.insert(argv.end() - 1, {"-include", host_view});  // the source stays last
  return argv;
}

// Analyses one item with clang argv `argv`, after the precompiled `preamble`
// when there is one; what it knows of calls into other units goes to `cross_unit`.
UnitFindings lint_one(const WorkItem& item, const std::vector<std::string>& argv, const std::string& preamble,
                      const LintConfig& config, const RunOptions& options, CrossUnitFacts& cross_unit) {
  UnitFindings unit;
  ParseHealth health;
  auto action = std::make_unique<LintAction>(config, options.cli_checks, unit, cross_unit, health.preamble_failed);
  auto files = files_in(item.directory);
  clang::tooling::ToolInvocation invocation(with_preamble(argv, preamble), std::move(action), files.get(),
                                            std::make_shared<clang::PCHContainerOperations>());
  invocation.setDiagnosticConsumer(&health);
  const bool ok = invocation.run();
  if (health.preamble_failed) return lint_one(item, argv, {}, config, options, cross_unit);
  if (health.getNumErrors() > 0 || !ok) {
    Note first = health.first_error;
    if (first.message.empty()) first.message = "clang could not run the compile command";
    const bool allowed = config.allow_parse_errors || options.allow_parse_errors;
    unit.findings.insert(unit.findings.begin(),
                         parse_failure(item.file, first, std::max(1u, health.getNumErrors()), allowed));
    for (auto& deferred : unit.deferred) ++deferred.first;
  }
  return unit;
}

}  // namespace

std::string unknown_checks_error(std::string_view globs, std::string_view where) {
  std::vector<std::string> names;
  for (const auto& info : registered_checks()) {
    names.emplace_back(info.id());
    names.emplace_back(info.name());
  }
  const std::vector<std::string> unmatched = unmatched_globs(globs, names);
  if (unmatched.empty()) return {};
  std::string quoted;
  for (const auto& glob : unmatched) quoted += (quoted.empty() ? "'" : ", '") + glob + "'";
  return std::string(where) + ": no check matches " + quoted;
}

RunResult run_checks(const std::vector<WorkItem>& items, const RunOptions& options) {
  RunResult result;
  // Every item's config is read before any item is analysed: a broken or
  // misspelt one stops the run instead of leaving its files to the defaults.
  std::map<std::string, LintConfig> configs;  // by path; "" when none is found
  std::vector<const LintConfig*> config_of(items.size());
  for (size_t index = 0; index < items.size(); ++index) {
    if (options.forced_config) {
      config_of[index] = &*options.forced_config;
      continue;
    }
    const std::string path = find_config_for(items[index].file);
    auto [it, inserted] = configs.try_emplace(path);
    config_of[index] = &it->second;
    if (!inserted || path.empty()) continue;
    std::string error;
    if (auto loaded = load_config(path, error)) it->second = std::move(*loaded);
    else result.errors.push_back(error);
  }
  auto validate = [&](const LintConfig& config) {
    const std::string error = unknown_checks_error(config.checks, config.source + ": Checks");
    if (error.empty()) return;
    result.errors.push_back(error);
    result.unknown_checks = true;
  };
  if (options.forced_config) validate(*options.forced_config);
  for (const auto& [path, config] : configs)
    if (!path.empty()) validate(config);
  if (!result.errors.empty()) return result;

  const std::string host_view = nvcc_host_view(options.paths);
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> directories;
  for (size_t index = 0; index < items.size(); ++index) {
    commands.push_back(command_for(items[index], *config_of[index], options, host_view));
    directories.push_back(items[index].directory);
  }
  std::optional<SharedPreambles> preambles;
  if (options.shared_preamble) preambles.emplace(commands, directories, host_view);

  std::vector<UnitFindings> per_item(items.size());
  CrossUnitFacts cross_unit;
  std::mutex mutex;  // guards the progress counter's output
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  auto worker = [&] {
    for (size_t index = next++; index < items.size(); index = next++) {
      const WorkItem& item = items[index];
      const std::string preamble = preambles ? preambles->preamble_for(index) : std::string();
      per_item[index] = lint_one(item, commands[index], preamble, *config_of[index], options, cross_unit);
      const size_t finished = ++done;
      if (options.progress) {
        std::lock_guard lock(mutex);
        std::fprintf(stderr, "\r[%zu/%zu] %s\033[K", finished, items.size(), item.file.c_str());
        if (finished == items.size()) std::fprintf(stderr, "\n");
      }
    }
  };
  const unsigned jobs = std::max(1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(items.size())));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < jobs; ++i) threads.emplace_back(worker);
  worker();
  for (auto& thread : threads) thread.join();

  // A header included by several files reports once.
  std::set<std::tuple<std::string, std::string, unsigned, unsigned, std::string>> seen;
  // A parse failure is its file's, even where the error is in a shared header.
  for (auto& unit : per_item)
    for (auto& finding : std::move(unit).settled(cross_unit))
      if (finding.rule_id == kParseErrorRule ||
          seen.emplace(finding.rule_id, finding.location.file, finding.location.line, finding.location.column,
                       finding.message).second)
        result.findings.push_back(std::move(finding));
  return result;
}

}  // namespace gpudiag::lint
