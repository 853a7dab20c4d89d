#include "trace_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "gpudiag/import/allocator_history.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string (*kBeside[])(const std::string&) = {import::allocator_history_path,
                                                          import::out_of_memory_snapshot_path};

// DIR/rank<N>.gdtrace or DIR/launcher.gdtrace: the names this file gives.
bool is_rank_or_launcher_name(const std::string& name) {
  if (name == "launcher.gdtrace") return true;
  constexpr std::string_view prefix = "rank", suffix = ".gdtrace";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return false;
  const std::string_view number = std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return number.find_first_not_of("0123456789") == std::string_view::npos;
}

// The rank a trace says, if any; an unreadable one says none.
std::optional<std::int32_t> rank_of(const std::string& path) {
  try {
    const JobPlace job = read_gdtrace_job(path);
    if (job.known()) return job.rank;
  } catch (const TraceError&) {
  }
  return std::nullopt;
}

}  // namespace

bool move_trace(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) return false;
  for (const auto beside : kBeside) {
    std::error_code beside_ec;
    fs::remove(beside(to), beside_ec);
    fs::rename(beside(from), beside(to), beside_ec);
  }
  return true;
}

NamedTraces name_traces_by_rank(const std::string& root, const std::string& root_name,
                                const std::vector<std::string>& children, const fs::path& dir,
                                fs::file_time_type started) {
  struct Entry {
    std::string path;
    std::optional<std::int32_t> rank;
    bool root = false;
  };
  std::vector<Entry> entries;
  if (!root.empty()) entries.push_back({root, rank_of(root), true});
  for (const auto& child : children) entries.push_back({child, rank_of(child), false});
  std::map<std::int32_t, std::vector<const Entry*>> by_rank;
  for (const Entry& e : entries)
    if (e.rank) by_rank[*e.rank].push_back(&e);

  NamedTraces named;
  for (const auto& [rank, claimed] : by_rank) {
    if (claimed.size() < 2) continue;
    std::string names;
    for (const Entry* e : claimed) names += (names.empty() ? "" : ", ") + fs::path(e->path).filename().string();
    named.warnings.push_back(
        fmt::format("{} traces say rank {} ({}): they keep their pid names", claimed.size(), rank, names));
  }

  // The files of an earlier run, which this run's would otherwise sit beside as if they were its own.
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    if (!is_rank_or_launcher_name(f.path().filename().string())) continue;
    std::error_code time_ec;
    if (fs::last_write_time(f.path(), time_ec) + std::chrono::seconds(1) >= started || time_ec) continue;
    std::error_code remove_ec;
    fs::remove(f.path(), remove_ec);
    for (const auto beside : kBeside) fs::remove(beside(f.path().string()), remove_ec);
    fs::remove(f.path().string() + ".html", remove_ec);  // the page gpudiag trace wrote of it
  }

  struct Named {
    std::string path;
    std::optional<std::int32_t> rank;
    bool root;
  };
  std::vector<Named> result;
  for (const Entry& e : entries) {
    std::string to;
    if (e.rank && by_rank[*e.rank].size() == 1)
      to = (dir / fmt::format("rank{}.gdtrace", *e.rank)).string();
    else if (e.root)
      to = by_rank.empty() ? root_name : (dir / "launcher.gdtrace").string();
    const std::string path = !to.empty() && to != e.path && move_trace(e.path, to) ? to : e.path;
    result.push_back({path, e.rank, e.root});
  }
  // The root's first, then the ranks in order, then the others as found.
  std::stable_sort(result.begin(), result.end(), [](const Named& a, const Named& b) {
    if (a.root != b.root) return a.root;
    if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
    return a.rank.value_or(0) < b.rank.value_or(0);
  });
  for (const Named& n : result) named.traces.push_back(n.path);
  return named;
}

}  // namespace gpudiag::cli
