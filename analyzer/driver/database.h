// Which files to analyse and with which command: a compilation database
// (-p BUILD_DIR) or per-extension defaults.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tooling {
class CompilationDatabase;
}

namespace gpudiag::lint {

struct WorkItem {
  std::string file;                      // absolute path of the source
  std::string directory;                 // the working directory of its command
  std::vector<std::string> command;      // as recorded (argv[0] = compiler); empty: use defaults
};

class Sources {
 public:
  // Loads BUILD_DIR/compile_commands.json; nullopt with `error` when absent or invalid.
  static std::optional<Sources> from_database(const std::string& build_dir, std::string& error);
  static Sources without_database();

  // Expands PATHS (files or folders) into work items; an empty list means the
  // whole database. Returns false with `error` for a missing path, or for
  // no paths without a database.
  bool select(const std::vector<std::string>& paths, std::vector<WorkItem>& out, std::string& error) const;

 private:
  std::shared_ptr<clang::tooling::CompilationDatabase> database_;
  WorkItem item_for(const std::string& file) const;
};

bool is_source_file(const std::string& path);

}  // namespace gpudiag::lint
