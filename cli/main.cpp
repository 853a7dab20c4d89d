// gpudiag: trace a training run, report on a trace, explain a rule or an
// error code, check the GPU stack.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "gpudiag/descriptors.h"

int main(int argc, char** argv) {
  // Before anything is opened: a file of gpudiag's on a closed stdout or
  // stderr would take in what gpudiag prints there.
  gpudiag::hold_closed_stdio();
  CLI::App app{"gpudiag: finds the errors of GPU training runs and explains them", "gpudiag"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(GPUDIAG_VERSION));
  int status = 0;
  // `gpudiag trace [OPTIONS] -- CMD ARGS...`: the command is cut off here and
  // passed through untouched; CLI11 sees only what comes before the `--`.
  std::optional<std::vector<std::string>> after_dashes;
  if (argc > 1 && std::string_view(argv[1]) == "trace")
    for (int i = 2; i < argc; ++i)
      if (std::string_view(argv[i]) == "--") {
        after_dashes.emplace(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
  gpudiag::cli::add_explain_command(app, status);
  gpudiag::cli::add_doctor_command(app, status);
  gpudiag::cli::add_trace_command(app, status, after_dashes);
  gpudiag::cli::add_report_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors (unknown command or flag, missing argument) exit 2.
    app.exit(e);
    return 2;
  }
  return status;
}
