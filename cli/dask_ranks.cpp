// analyse_ranks_on_dask: the request to the driver in a file, its answer and
// its complaints in two more, all in one temporary folder; the driver is
// started without a shell, its arguments being paths.
#include "dask_ranks.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace gpudiag::cli {
namespace {

namespace fs = std::filesystem;

// gpudiag_dask.py's exit statuses.
constexpr int kDriverNoCluster = 2, kDriverNoDask = 3;
constexpr const char* kDebianPackage = "Debian: apt install python3-distributed";

// The Debian python3, whose python3-distributed the driver needs; GPUDIAG_PYTHON names another.
std::string python() {
  const char* chosen = std::getenv("GPUDIAG_PYTHON");
  return chosen && *chosen ? chosen : "/usr/bin/python3";
}

fs::path own_exe() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw DaskError(fmt::format("cannot find the gpudiag binary: {}", ec.message()));
  return exe;
}

// share/gpudiag/job beside the binary's folder, in the build tree as once installed.
fs::path driver_path(const fs::path& exe) {
  const fs::path driver = exe.parent_path() / ".." / "share" / "gpudiag" / "job" / "gpudiag_dask.py";
  std::error_code ec;
  if (!fs::is_regular_file(driver, ec))
    throw DaskError(fmt::format("the Dask driver {} is missing: gpudiag is not installed whole",
                                fs::weakly_canonical(driver, ec).string()));
  return fs::weakly_canonical(driver, ec);
}

// A folder of its own for the driver's files, removed with what it holds.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    path_ = (fs::temp_directory_path(ec) / "gpudiag-dask-XXXXXX").string();
    if (ec || mkdtemp(path_.data()) == nullptr)
      throw DaskError(fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const char* name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The driver's last words: the line that says why, after any traceback.
std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last.empty() ? "it said nothing" : last;
}

// Runs `argv` with stdin from /dev/null and stdout, stderr into files; its wait status.
int run_driver(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    throw DaskError(fmt::format("--dask needs python3 with dask.distributed, and {} cannot be run: {} ({})", argv[0],
                                std::strerror(error), kDebianPackage));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

RankAnalysis analyse_ranks_on_dask(const std::vector<std::string>& paths, const DaskRanksOptions& options) {
  const std::string& scheduler = options.scheduler;
  const bool local = scheduler == "local";
  std::error_code ec;
  // Checked here too, as Dask waits for a scheduler file that is not there.
  if (!local && scheduler.find("://") == std::string::npos && !fs::is_regular_file(scheduler, ec))
    throw DaskError(fmt::format("--dask {}: no such scheduler file (`dask scheduler --scheduler-file {}` writes one; "
                                "or give local, or the scheduler's address tcp://HOST:PORT)",
                                scheduler, scheduler));
  const fs::path exe = own_exe();
  const fs::path driver = driver_path(exe);

  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned workers = std::max<unsigned>(
      1, std::min<unsigned>(options.workers ? options.workers : cores, static_cast<unsigned>(paths.size())));
  std::vector<std::string> rank_args = options.rank_args;
  if (options.memory_bytes != 0) {
    // The local cluster's workers share this machine's memory, as analyse_ranks' threads do.
    const std::uint64_t bytes = local ? std::max<std::uint64_t>(options.memory_bytes / workers, kReportBytesPerEvent)
                                      : options.memory_bytes;
    rank_args.insert(rank_args.end(), {"--memory", std::to_string(bytes)});
  }
  // A worker that sees this folder reads the traces and writes the pages at
  // the paths as given, else at their absolute paths.
  std::vector<std::string> pages(paths.size());
  nlohmann::json traces = nlohmann::json::array();
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!options.html_dir.empty())
      pages[i] = (fs::path(options.html_dir) / (fs::path(paths[i]).filename().string() + ".html")).string();
    traces.push_back({{"path", paths[i]},
                      {"abs", fs::absolute(paths[i], ec).string()},
                      {"html", pages[i]},
                      {"html_abs", pages[i].empty() ? std::string() : fs::absolute(pages[i], ec).string()}});
  }
  const nlohmann::json request = {{"scheduler", local || scheduler.find("://") != std::string::npos
                                                    ? scheduler
                                                    : fs::absolute(scheduler, ec).string()},
                                  {"workers", workers},
                                  {"gpudiag", exe.string()},
                                  {"cwd", fs::current_path(ec).string()},
                                  {"args", rank_args},
                                  {"traces", traces}};

  const TempDir dir;
  const std::string request_file = dir.file("request.json"), out_file = dir.file("out.jsonl"),
                    err_file = dir.file("stderr.txt");
  {
    std::ofstream out(request_file, std::ios::binary);
    out << request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!out) throw DaskError(fmt::format("cannot write {}", request_file));
  }
  const std::string interpreter = python();
  const int status = run_driver({interpreter, driver.string(), request_file}, out_file, err_file);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string why = last_line(read_file(err_file));
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == kDriverNoDask)
      throw DaskError(fmt::format("--dask needs dask.distributed, which {} cannot import ({})", interpreter,
                                  kDebianPackage));
    if (code == kDriverNoCluster) throw DaskError(fmt::format("--dask {}: {}", scheduler, why));
    if (code == 127 || code == 126)  // the interpreter is a script whose own interpreter is missing
      throw DaskError(fmt::format("--dask needs python3 with dask.distributed, and {} cannot be run: {} ({})",
                                  interpreter, why, kDebianPackage));
    throw DaskError(fmt::format("--dask: the Dask driver {} failed ({}): {}", driver.string(),
                                WIFEXITED(status) ? fmt::format("exit status {}", code)
                                                  : fmt::format("signal {}", WTERMSIG(status)),
                                why));
  }

  std::vector<std::optional<RankSummary>> summaries(paths.size());
  std::vector<std::string> errors(paths.size());
  std::ifstream answer(out_file);
  for (std::string line; std::getline(answer, line);) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("index") || !j["index"].is_number_unsigned() ||
        j["index"].get<std::size_t>() >= paths.size())
      throw DaskError(fmt::format("--dask: the Dask driver answered what is not one of the traces: {}", line));
    const std::size_t i = j["index"].get<std::size_t>();
    if (j.contains("error")) {
      errors[i] = j["error"].get<std::string>();
      continue;
    }
    try {
      RankSummary s = rank_summary_from_json(nlohmann::json::parse(j.at("summary").get<std::string>()));
      s.path = paths[i];  // as the local analysis names it, whichever path the worker read
      summaries[i] = std::move(s);
    } catch (const std::exception& e) {
      errors[i] = fmt::format("{}: the summary a Dask worker made cannot be read: {}", paths[i], e.what());
    }
  }

  RankAnalysis out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (summaries[i]) {
      out.summaries.push_back(std::move(*summaries[i]));
      out.pages.push_back(pages[i]);
    } else {
      out.errors.push_back(errors[i].empty() ? paths[i] + ": the Dask driver said nothing of it" : errors[i]);
    }
  }
  return out;
}

}  // namespace gpudiag::cli
