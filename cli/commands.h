// Each gpudiag subcommand registers itself on the root CLI11 app. Its
// callback stores the process exit status in `status`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpudiag::cli {

void add_explain_command(CLI::App& app, int& status);
void add_doctor_command(CLI::App& app, int& status);
// `after_dashes`: the words after the first `--` of a `gpudiag trace` command
// line, which main() keeps from CLI11 (it would parse them as our own
// positionals); empty when there is no `--`.
void add_trace_command(CLI::App& app, int& status, const std::optional<std::vector<std::string>>& after_dashes);
void add_report_command(CLI::App& app, int& status);

}  // namespace gpudiag::cli
