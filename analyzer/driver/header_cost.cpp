#include "header_cost.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace gpudiag::lint {
namespace {
namespace fs = std::filesystem;

struct Include {
  std::string name;
  bool angled = false, next = false;  // next: #include_next
};

// The #include and #include_next lines of `text`, wherever they are.
std::vector<Include> includes_in(std::string_view text) {
  std::vector<Include> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto skip_blanks = [&] {
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    };
    skip_blanks();
    if (line.empty() || line.front() != '#') continue;
    line.remove_prefix(1);
    skip_blanks();
    if (!line.starts_with("include")) continue;
    line.remove_prefix(7);
    Include include;
    if (line.starts_with("_next")) {
      include.next = true;
      line.remove_prefix(5);
    }
    skip_blanks();
    if (line.empty() || (line.front() != '<' && line.front() != '"')) continue;
    include.angled = line.front() == '<';
    const size_t close = line.find(include.angled ? '>' : '"', 1);
    if (close == std::string_view::npos) continue;
    include.name = std::string(line.substr(1, close - 1));
    out.push_back(std::move(include));
  }
  return out;
}

}  // namespace

struct HeaderCosts::Search {
  struct File {
    std::string path;
    std::uint64_t bytes = 0;
    int found_in = -1;  // index into `dirs`, -1 beside its includer or absolute
    bool read = false;
    std::vector<std::uint32_t> includes;
  };
  std::string directory;
  std::vector<std::string> dirs;  // the search list for <...>; "..." starts `quoted_only` earlier
  size_t quoted_only = 0;         // how many of `dirs`, at its front, only "..." searches
  std::map<std::string, std::uint32_t> id_of;
  std::vector<File> files;
  std::map<std::string, std::vector<std::uint32_t>> closure_of;  // by spelling
  std::vector<char> preincluded;                                 // by file id

  // The id of the file at `path`, or -1 when there is none.
  std::int64_t file_at(const fs::path& path, int found_in) {
    std::error_code ec;
    const fs::path full = (path.is_absolute() ? path : fs::path(directory) / path).lexically_normal();
    const auto it = id_of.find(full.string());
    if (it != id_of.end()) return it->second;
    if (!fs::is_regular_file(full, ec)) return -1;
    const auto id = static_cast<std::uint32_t>(files.size());
    id_of.emplace(full.string(), id);
    files.push_back(File{full.string(), static_cast<std::uint64_t>(fs::file_size(full, ec)), found_in, false, {}});
    return id;
  }

  // Where `include` leads from a file in `includer_dir` found in search
  // folder `includer_found_in`; -1 when nowhere.
  std::int64_t resolve(const Include& include, const std::string& includer_dir, int includer_found_in) {
    if (fs::path(include.name).is_absolute()) return file_at(include.name, -1);
    size_t first = include.angled ? quoted_only : 0;
    if (include.next && includer_found_in >= 0) first = static_cast<size_t>(includer_found_in) + 1;
    if (!include.angled && !include.next)
      if (const std::int64_t beside = file_at(fs::path(includer_dir) / include.name, -1); beside >= 0) return beside;
    for (size_t dir = first; dir < dirs.size(); ++dir)
      if (const std::int64_t found = file_at(fs::path(dirs[dir]) / include.name, static_cast<int>(dir)); found >= 0)
        return found;
    return -1;
  }

  void read(std::uint32_t id) {
    if (files[id].read) return;
    files[id].read = true;
    std::ifstream in(files[id].path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string dir = fs::path(files[id].path).parent_path().string();
    const int found_in = files[id].found_in;
    for (const Include& include : includes_in(text))
      if (const std::int64_t target = resolve(include, dir, found_in); target >= 0)
        files[id].includes.push_back(static_cast<std::uint32_t>(target));
  }

  // The files `root` reaches, itself included.
  std::vector<std::uint32_t> closure(std::uint32_t root) {
    std::vector<std::uint32_t> out, stack{root};
    std::vector<char> seen(files.size(), 0);
    while (!stack.empty()) {
      const std::uint32_t id = stack.back();
      stack.pop_back();
      if (id < seen.size() && seen[id]) continue;
      if (id >= seen.size()) seen.resize(files.size(), 0);
      seen[id] = 1;
      out.push_back(id);
      read(id);
      for (std::uint32_t next : files[id].includes) stack.push_back(next);
    }
    return out;
  }
};

HeaderCosts::HeaderCosts(const HeaderSearchList& list, const std::string& directory)
    : search_(std::make_unique<Search>()) {
  search_->directory = directory;
  search_->dirs = list.dirs;
  search_->quoted_only = list.quoted_only;
  for (const std::string& pre : list.preincluded)
    if (const std::int64_t id = search_->resolve(Include{pre, false, false}, directory, -1); id >= 0)
      for (std::uint32_t reached : search_->closure(static_cast<std::uint32_t>(id))) {
        if (reached >= search_->preincluded.size()) search_->preincluded.resize(reached + 1, 0);
        search_->preincluded[reached] = 1;
      }
}

HeaderCosts::~HeaderCosts() = default;

std::uint64_t HeaderCosts::bytes(const std::vector<std::string>& headers) {
  Search& s = *search_;
  std::vector<char> counted(s.files.size(), 0);
  std::uint64_t total = 0;
  for (const std::string& spelled : headers) {
    auto it = s.closure_of.find(spelled);
    if (it == s.closure_of.end()) {
      std::vector<std::uint32_t> reached;
      if (spelled.size() > 2) {
        const Include include{spelled.substr(1, spelled.size() - 2), spelled.front() == '<', false};
        if (const std::int64_t id = s.resolve(include, s.directory, -1); id >= 0)
          reached = s.closure(static_cast<std::uint32_t>(id));
      }
      it = s.closure_of.emplace(spelled, std::move(reached)).first;
    }
    counted.resize(s.files.size(), 0);
    for (std::uint32_t id : it->second) {
      if (counted[id] || (id < s.preincluded.size() && s.preincluded[id])) continue;
      counted[id] = 1;
      total += s.files[id].bytes;
    }
  }
  return total;
}

}  // namespace gpudiag::lint
