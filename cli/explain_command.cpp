// gpudiag explain <rule id | rule name | error>: prints a catalogue entry, or
// what a CUDA runtime/driver error, cuDNN status or cuBLAS status means.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "gpudiag/explain/lookup.h"
#include "gpudiag/explain/render.h"

namespace gpudiag::cli {
namespace {

struct ExplainOptions {
  std::vector<std::string> words;
  std::string format = "text";
  bool list = false;
};

int run_explain(const ExplainOptions& options) {
  std::string query;
  for (const auto& w : options.words) query += (query.empty() ? "" : " ") + w;
  const auto format = explain::parse_format(options.format).value_or(explain::Format::Text);
  if (options.list) {
    explain::render_list(std::cout, format);
    return 0;
  }
  const explain::LookupResult result = explain::lookup(query);

  using Kind = explain::LookupResult::Kind;
  if (result.kind == Kind::Rule || result.kind == Kind::Error) {
    explain::render(std::cout, result, {format, format == explain::Format::Text && want_color(STDOUT_FILENO)});
    return 0;
  }
  if (format == explain::Format::Json) std::cout << explain::to_json(result).dump(2) << '\n';
  if (result.kind == Kind::Ambiguous) {
    std::cerr << fmt::format("gpudiag explain: '{}' matches several errors: {}.\nGive the full name.\n", query,
                             fmt::join(result.candidates, ", "));
    return 2;
  }
  std::cerr << fmt::format("gpudiag explain: no rule or error matches '{}'.\n", query);
  for (const auto& note : result.notes) std::cerr << note << '\n';
  if (!result.candidates.empty()) {
    std::cerr << "Closest matches:\n";
    for (const auto& c : result.candidates) std::cerr << "  " << c << '\n';
  } else {
    // Nothing is close: offer the rules, the most likely thing to look up.
    std::cerr << "Nothing is close. The rules are:\n";
    for (const auto& rule : catalogue()) std::cerr << "  " << rule_tag(rule) << '\n';
  }
  std::cerr << "Errors can be CUDA runtime or driver names and numbers (cudaErrorIllegalAddress, 700, "
               "CUDA_ERROR_ILLEGAL_ADDRESS), cuDNN and cuBLAS statuses (CUDNN_STATUS_BAD_PARAM, BAD_PARAM) or a "
               "CUDA error message.\n";
  return 2;
}

}  // namespace

void add_explain_command(CLI::App& app, int& status) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "Explain a rule (GD004, premature-free) or an error: CUDA runtime/driver (700, cudaErrorIllegalAddress, "
      "CUDA_ERROR_ILLEGAL_ADDRESS, \"an illegal memory access was encountered\"), cuDNN (CUDNN_STATUS_BAD_PARAM) "
      "or cuBLAS (CUBLAS_STATUS_EXECUTION_FAILED)");
  cmd->add_option("what", options->words,
                  "a rule id or name, an error name, number or message (several words are joined)");
  cmd->add_flag("--list", options->list, "list every rule and every error name and number explain knows");
  cmd->add_option("--format", options->format, "text (the default; colour on a terminal unless NO_COLOR), "
                                               "markdown or json")
      ->check(CLI::IsMember({"text", "markdown", "md", "json"}));
  cmd->callback([options, &status] {
    if (options->words.empty() && !options->list) throw CLI::RequiredError("what (or --list)");
    status = run_explain(*options);
  });
}

}  // namespace gpudiag::cli
