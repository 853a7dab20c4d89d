// gpudiag doctor: is the GPU stack usable, which versions, do they fit.
// Exit 0 when a GPU is usable, 1 when not.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "gpudiag/doctor/probe.h"
#include "gpudiag/doctor/report.h"
#include "gpudiag/emit.h"

#include <nlohmann/json.hpp>

namespace gpudiag::cli {

void add_doctor_command(CLI::App& app, int& status) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check the GPU stack: NVIDIA driver, devices, CUDA runtime, cuDNN, CUPTI, CUDA_VISIBLE_DEVICES. "
      "Exit 0 when a GPU is usable, 1 when not");
  cmd->add_flag("--json", *json, "print the report as JSON");
  cmd->callback([json, &status] {
    auto probe = doctor::system_probe();
    const doctor::Report report = doctor::diagnose(doctor::gather(*probe));
    if (*json) {
      std::cout << doctor::to_json(report).dump(2) << '\n';
    } else {
      doctor::render_text(std::cout, report, want_color(STDOUT_FILENO));
    }
    status = doctor::exit_code(report);
  });
}

}  // namespace gpudiag::cli
