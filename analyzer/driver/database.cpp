#include "database.h"

#include <algorithm>
#include <filesystem>

#include <clang/Tooling/JSONCompilationDatabase.h>

namespace gpudiag::lint {
namespace fs = std::filesystem;

bool is_source_file(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".cu" || ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".C";
}

std::optional<Sources> Sources::from_database(const std::string& build_dir, std::string& error) {
  const fs::path json = fs::path(build_dir) / "compile_commands.json";
  if (!fs::exists(json)) {
    error = "no compilation database: '" + json.string() + "' does not exist (configure with "
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON or run the build under bear)";
    return std::nullopt;
  }
  std::string load_error;
  auto database = clang::tooling::JSONCompilationDatabase::loadFromFile(
      json.string(), load_error, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!database) {
    error = "cannot read compilation database '" + json.string() + "': " + load_error;
    return std::nullopt;
  }
  Sources sources;
  sources.database_ = std::move(database);
  return sources;
}

Sources Sources::without_database() { return Sources{}; }

WorkItem Sources::item_for(const std::string& file) const {
  WorkItem item;
  item.file = file;
  item.directory = fs::path(file).parent_path().string();
  if (database_) {
    auto commands = database_->getCompileCommands(file);
    if (!commands.empty()) {
      item.directory = commands.front().Directory;
      item.command = commands.front().CommandLine;
    }
  }
  return item;
}

bool Sources::select(const std::vector<std::string>& paths, std::vector<WorkItem>& out, std::string& error) const {
  std::vector<std::string> files;
  std::vector<std::string> known;
  if (database_) {
    for (const auto& file : database_->getAllFiles()) known.push_back(fs::weakly_canonical(file).string());
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
  }
  if (paths.empty()) {
    if (!database_) {
      error = "no input: give files or folders to analyse, or -p BUILD_DIR with a compilation database";
      return false;
    }
    files = known;
  }
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      error = "no such file or folder: '" + path + "'";
      return false;
    }
    const std::string absolute = fs::weakly_canonical(path, ec).string();
    if (!fs::is_directory(absolute, ec)) {
      files.push_back(absolute);
      continue;
    }
    if (database_) {
      const std::string prefix = absolute + "/";
      for (const auto& file : known)
        if (file.rfind(prefix, 0) == 0) files.push_back(file);
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(absolute, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec) && is_source_file(it->path().string())) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  for (const auto& file : files) out.push_back(item_for(file));
  return true;
}

}  // namespace gpudiag::lint
