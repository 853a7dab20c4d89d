// gpulint: finds GPU programming errors in CUDA/C++ sources before they run.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "check.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "runner.h"

namespace {

constexpr int kExitClean = 0;
constexpr int kExitFindings = 1;
constexpr int kExitToolError = 2;

int list_rules(std::ostream& out) {
  for (const auto& info : gpudiag::lint::registered_checks())
    out << info.id() << "  " << info.name() << "  [" << gpudiag::to_string(info.rule->severity) << "]  "
        << info.rule->summary << '\n';
  return kExitClean;
}

// After a glob that names no check: what the globs can name.
int unknown_checks(std::ostream& err) {
  err << "gpulint: the checks, by id or name ('*' matches any text, a leading '-' disables):\n";
  list_rules(err);
  return kExitToolError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpulint: finds GPU programming errors (GD001..GD012) in CUDA/C++ sources"};
  std::string build_dir, checks, format = "text", output, fail_on = "warning", config_file;
  unsigned jobs = 1;
  bool show_rules = false, allow_parse_errors = false, no_preamble = false;
  std::vector<std::string> paths;
  app.add_option("-p,--build-dir", build_dir, "Folder holding compile_commands.json");
  app.add_option("--checks", checks, "Comma-separated globs over rule ids/names; '-' disables (e.g. '*,-GD010')");
  app.add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json", "sarif"}));
  app.add_option("-o,--output", output, "Write the report to FILE instead of stdout");
  app.add_option("-j,--jobs", jobs, "Files analysed in parallel")->check(CLI::Range(1u, 256u));
  app.add_option("--fail-on", fail_on, "Exit 1 when a finding has at least this severity")
      ->check(CLI::IsMember({"note", "warning", "error"}));
  app.add_flag("--allow-parse-errors", allow_parse_errors,
               "A file that does not parse is a note, not an error (as AllowParseErrors: true in .gpulint.yaml)");
  app.add_flag("--no-preamble", no_preamble,
               "Parse the CUDA headers in every file instead of once per compile command (for comparing)");
  app.add_option("--config", config_file, "Use this .gpulint.yaml for every file instead of searching upward");
  app.add_flag("--list-rules", show_rules, "List the rules gpulint checks and exit");
  app.add_option("paths", paths, "Files or folders (every translation unit under them)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? kExitClean : kExitToolError;
  }
  // A check that names no rule of the catalogue is a broken build: nothing
  // it would report could be selected, suppressed or explained.
  if (const auto& broken = gpudiag::lint::check_registry_errors(); !broken.empty()) {
    for (const auto& message : broken) std::cerr << "gpulint: error: " << message << '\n';
    return kExitToolError;
  }
  if (show_rules) return list_rules(std::cout);
  if (const std::string error = gpudiag::lint::unknown_checks_error(checks, "--checks"); !error.empty()) {
    std::cerr << "gpulint: error: " << error << '\n';
    return unknown_checks(std::cerr);
  }

  gpudiag::lint::RunOptions options;
  options.cli_checks = checks;
  options.allow_parse_errors = allow_parse_errors;
  options.jobs = jobs;
  options.shared_preamble = !no_preamble;
  options.paths = gpudiag::lint::default_tool_paths(argv[0]);
  if (!config_file.empty()) {
    std::string error;
    options.forced_config = gpudiag::lint::load_config(config_file, error);
    if (!options.forced_config) {
      std::cerr << "gpulint: error: " << error << '\n';
      return kExitToolError;
    }
  }
  std::string error;
  std::optional<gpudiag::lint::Sources> sources;
  if (!build_dir.empty()) sources = gpudiag::lint::Sources::from_database(build_dir, error);
  else sources = gpudiag::lint::Sources::without_database();
  std::vector<gpudiag::lint::WorkItem> items;
  if (!sources || !sources->select(paths, items, error)) {
    std::cerr << "gpulint: error: " << error << '\n';
    return kExitToolError;
  }
  if (items.empty()) {
    std::cerr << "gpulint: error: no translation units to analyse under the given paths\n";
    return kExitToolError;
  }
  options.progress = items.size() > 4 && isatty(STDERR_FILENO);

  gpudiag::lint::RunResult result = gpudiag::lint::run_checks(items, options);
  if (!result.errors.empty()) {
    for (const auto& message : result.errors) std::cerr << "gpulint: error: " << message << '\n';
    return result.unknown_checks ? unknown_checks(std::cerr) : kExitToolError;
  }

  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    if (!file) {
      std::cerr << "gpulint: error: cannot write '" << output << "'\n";
      return kExitToolError;
    }
  }
  std::ostream& out = output.empty() ? std::cout : file;
  if (format == "json") {
    gpudiag::emit_json(out, result.findings);
  } else if (format == "sarif") {
    gpudiag::SarifOptions sarif;
    sarif.tool_name = "gpulint";
    sarif.tool_version = GPUDIAG_VERSION;
    sarif.tool_rules.push_back({"clang-diagnostic-error",
                                "The file did not parse: clang's first error; the checks ran on what parsed",
                                gpudiag::Severity::Error});
    std::error_code ec;
    sarif.base_dir = std::filesystem::current_path(ec).string();
    gpudiag::emit_sarif(out, result.findings, sarif);
  } else {
    gpudiag::TextOptions text;
    text.color = output.empty() && gpudiag::want_color(STDOUT_FILENO);
    gpudiag::emit_text(out, result.findings, text);
    if (output.empty() && isatty(STDERR_FILENO))
      std::cerr << result.findings.size() << " finding" << (result.findings.size() == 1 ? "" : "s") << " in "
                << items.size() << " file" << (items.size() == 1 ? "" : "s") << '\n';
  }
  const auto threshold = gpudiag::parse_severity(fail_on).value_or(gpudiag::Severity::Warning);
  for (const auto& finding : result.findings)
    if (finding.severity >= threshold) return kExitFindings;
  return kExitClean;
}
