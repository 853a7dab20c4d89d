#include "run_gpulint.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "scratch_dir.h"

namespace gpudiag::lint::test {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

LintRun run_gpulint(const std::vector<std::string>& args, const std::string& cwd) {
  const std::string dir = temp_dir("run");
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    std::string exe = GPULINT_EXE;
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  LintRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = slurp(out_path);
  run.err = slurp(err_path);
  return run;
}

std::string temp_dir(const std::string& name) {
  static int counter = 0;
  return gpudiag::test::scratch_dir("gpulint_" + name + "_" + std::to_string(counter++));
}

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

size_t count_rule(const std::string& json_text, const std::string& rule) {
  size_t count = 0;
  const auto report = nlohmann::json::parse(json_text);  // kept alive: the loop reads into it
  for (const auto& finding : report.at("findings"))
    if (finding.at("rule").get<std::string>() == rule) ++count;
  return count;
}

}  // namespace gpudiag::lint::test
