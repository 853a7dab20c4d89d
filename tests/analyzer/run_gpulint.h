// Runs the gpulint executable and captures what it prints.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpudiag::lint::test {

struct LintRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Arguments are passed as they are (no shell); `cwd` empty keeps the current one.
LintRun run_gpulint(const std::vector<std::string>& args, const std::string& cwd = {});

// A fresh empty folder under the test temp dir.
std::string temp_dir(const std::string& name);
void write_file(const std::string& path, const std::string& text);

// The findings of rule `rule` in a --format=json report.
size_t count_rule(const std::string& json_text, const std::string& rule);

}  // namespace gpudiag::lint::test
