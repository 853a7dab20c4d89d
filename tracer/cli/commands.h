// Each gpudiag subcommand registers itself on the root CLI11 app. Its
// callback stores the process exit status in `status`.
#pragma once

namespace CLI {
class App;
}

namespace gpudiag::cli {

void add_explain_command(CLI::App& app, int& status);
void add_doctor_command(CLI::App& app, int& status);
void add_trace_command(CLI::App& app, int& status);
void add_report_command(CLI::App& app, int& status);

}  // namespace gpudiag::cli
