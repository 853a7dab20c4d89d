// expand_trace_inputs: what `gpudiag report run/`, `a b c` and 'run/*.json.gz' name.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "gpudiag/import/allocator_history.h"
#include "gpudiag/job/analyse_ranks.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;

bool ends_with(std::string_view s, std::string_view tail) { return s.size() >= tail.size() && s.ends_with(tail); }

// A trace in a folder: by its name, as the traces a job leaves are named.
// The files gpudiag writes beside a trace are not traces.
bool looks_like_trace(const fs::path& file) {
  const std::string name = file.filename().string();
  if (ends_with(name, ".torch-memory.json") || ends_with(name, ".torch-oom.pickle") || ends_with(name, ".html") ||
      ends_with(name, ".rank-summary.json"))
    return false;
  return ends_with(name, ".gdtrace") || ends_with(name, ".json") || ends_with(name, ".json.gz") ||
         ends_with(name, ".sqlite");
}

bool has_glob_characters(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

}  // namespace

std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs) {
  std::set<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::size_t found = 0;
      for (const fs::directory_entry& e : fs::directory_iterator(input, ec))
        if (e.is_regular_file(ec) && looks_like_trace(e.path())) files.insert(e.path().string()), ++found;
      if (ec) throw TraceError(fmt::format("{}: cannot list the folder: {}", input, ec.message()));
      if (found == 0)
        throw TraceError(fmt::format("{}: the folder holds no trace (.gdtrace, .json, .json.gz, .sqlite)", input));
    } else if (fs::exists(input, ec)) {
      files.insert(input);
    } else if (has_glob_characters(input)) {
      glob_t matches{};
      const int status = glob(input.c_str(), 0, nullptr, &matches);
      std::size_t found = 0;
      if (status == 0)
        for (std::size_t i = 0; i < matches.gl_pathc; ++i)
          if (fs::is_regular_file(matches.gl_pathv[i], ec)) files.insert(matches.gl_pathv[i]), ++found;
      globfree(&matches);
      if (found == 0) throw TraceError(fmt::format("{}: no file matches", input));
    } else {
      throw TraceError(fmt::format("{}: no such file or folder", input));
    }
  }
  return {files.begin(), files.end()};
}

}  // namespace gpudiag
