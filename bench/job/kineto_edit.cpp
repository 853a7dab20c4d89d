#include "kineto_edit.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace gpudiag::bench {
namespace {

bool is_number(const json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number();
}

std::string_view name_of(const json& e) {
  const auto it = e.find("name");
  return it != e.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

// As the job report counts data loading (job/src/rank_summary.cpp).
bool is_data_loading(std::string_view name) {
  return name.starts_with("enumerate(DataLoader)") || name == "data_loading" || name == "data loading";
}

bool same_thread(const json& a, const json& b) {
  return a.value("pid", json()) == b.value("pid", json()) && a.value("tid", json()) == b.value("tid", json());
}

}  // namespace

double start_us(const json& event) { return is_number(event, "ts") ? event["ts"].get<double>() : 0.0; }
double end_us(const json& event) {
  return start_us(event) + (is_number(event, "dur") ? event["dur"].get<double>() : 0.0);
}

KinetoLayout layout_of(const json& trace) {
  KinetoLayout l;
  const json& events = trace.at("traceEvents");
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e.value("ph", "") != "X") continue;
    const std::string_view name = name_of(e);
    if (name.starts_with("ProfilerStep#"))
      l.steps.push_back(i);
    else if (is_data_loading(name))
      l.data_loading.push_back(i);
    else if (name.starts_with("c10d::") && name != "c10d::wait")
      l.calls.push_back(i);
    else if (name.starts_with("gloo:"))
      l.runs.push_back(i);
  }
  const auto by_start = [&](std::size_t a, std::size_t b) { return start_us(events[a]) < start_us(events[b]); };
  for (auto* list : {&l.steps, &l.data_loading, &l.calls, &l.runs})
    std::stable_sort(list->begin(), list->end(), by_start);
  return l;
}

void insert_time(json& trace, double at_us, double extra_us) {
  for (json& e : trace["traceEvents"]) {
    if (!is_number(e, "ts")) continue;
    const double start = e["ts"].get<double>();
    if (start >= at_us)
      e["ts"] = start + extra_us;
    else if (is_number(e, "dur") && start + e["dur"].get<double>() > at_us)
      e["dur"] = e["dur"].get<double>() + extra_us;
  }
}

void drop_events(json& trace, const std::vector<std::size_t>& indexes) {
  json& events = trace["traceEvents"];
  std::unordered_set<std::size_t> gone(indexes.begin(), indexes.end());
  for (const std::size_t i : indexes)
    for (std::size_t j = 0; j < events.size(); ++j)
      if (j != i && same_thread(events[i], events[j]) && start_us(events[j]) >= start_us(events[i]) &&
          end_us(events[j]) <= end_us(events[i]))
        gone.insert(j);
  json kept = json::array();
  for (std::size_t j = 0; j < events.size(); ++j)
    if (!gone.count(j)) kept.push_back(std::move(events[j]));
  events = std::move(kept);
}

void cut_at(json& trace, double at_us, double close_us) {
  json kept = json::array();
  for (json& e : trace["traceEvents"]) {
    if (is_number(e, "ts") && name_of(e) == "Record Window End") {
      e["ts"] = at_us + close_us;
    } else if (is_number(e, "ts") && e.value("ph", "") != "M") {
      const double start = e["ts"].get<double>();
      if (start > at_us) continue;
      if (is_number(e, "dur") && start + e["dur"].get<double>() > at_us) e["dur"] = at_us + close_us - start;
    }
    kept.push_back(std::move(e));
  }
  trace["traceEvents"] = std::move(kept);
}

void make_rank(json& trace, int rank, int world_size, std::int64_t id_offset, double shift_us) {
  if (trace.contains("distributedInfo")) {
    json& info = trace["distributedInfo"];
    info["rank"] = rank;
    info["world_size"] = world_size;
    if (info.contains("pg_config"))
      for (json& group : info["pg_config"]) {
        json ranks = json::array();
        for (int r = 0; r < world_size; ++r) ranks.push_back(r);
        group["pg_size"] = world_size;
        group["ranks"] = std::move(ranks);
      }
  }
  trace["traceName"] = "rank" + std::to_string(rank) + ".kineto.json";
  for (json& e : trace["traceEvents"]) {
    if (is_number(e, "pid")) e["pid"] = e["pid"].get<std::int64_t>() + id_offset;
    if (is_number(e, "tid") && e["tid"].get<std::int64_t>() != 0) e["tid"] = e["tid"].get<std::int64_t>() + id_offset;
    if (is_number(e, "ts")) e["ts"] = e["ts"].get<double>() + shift_us;
  }
}

}  // namespace gpudiag::bench
