// `gpudiag explain --list`: every rule and error explain knows.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/explain/render.h"

namespace gpudiag::explain {
namespace {

nlohmann::json entry_json(const ErrorEntry& e) {
  nlohmann::json j = {{"library", to_string(e.library)}, {"name", e.name}, {"code", e.code}, {"explained", e.explained()}};
  if (e.library == Library::CudaRuntime) {
    if (auto driver = driver_name_for(e.code); !driver.empty()) j["driver_name"] = driver;
  }
  return j;
}

void list_table(std::ostream& out, std::string_view title, std::span<const ErrorEntry> entries, bool driver_column) {
  out << '\n' << title << '\n';
  std::size_t name_width = 0, driver_width = 0;
  for (const auto& e : entries) {
    name_width = std::max(name_width, e.name.size());
    driver_width = std::max(driver_width, driver_name_for(e.code).size());
  }
  for (const auto& e : entries) {
    std::string line = fmt::format("  {:>5}  {:<{}}", e.code, e.name, name_width);
    if (driver_column) line += fmt::format("  {:<{}}", driver_name_for(e.code), driver_width);
    line += e.explained() ? "  explained" : "  name only";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

}  // namespace

void render_list(std::ostream& out, Format format) {
  if (format == Format::Json) {
    nlohmann::json j = {{"rules", nlohmann::json::array()}, {"errors", nlohmann::json::array()}};
    for (const auto& rule : catalogue()) j["rules"].push_back({{"id", rule.id}, {"name", rule.name}, {"summary", rule.summary}});
    for (auto table : {cuda_runtime_errors(), cuda_driver_only_errors(), cudnn_statuses(), cublas_statuses()}) {
      for (const auto& e : table) j["errors"].push_back(entry_json(e));
    }
    for (const auto& a : cudnn_aliases()) {
      j["errors"].push_back({{"library", "cuDNN"}, {"name", a.name}, {"code", a.code}, {"alias_of", find_cudnn_status(a.code)->name}});
    }
    out << j.dump(2) << '\n';
    return;
  }
  out << "Rules\n";
  for (const auto& rule : catalogue()) out << fmt::format("  {:<28} {}\n", rule_tag(rule), rule.summary);
  list_table(out, "CUDA runtime errors (cudaError_t) and their driver API names (CUresult)", cuda_runtime_errors(), true);
  list_table(out, "CUDA driver API errors without a runtime twin", cuda_driver_only_errors(), false);
  list_table(out, "cuDNN statuses (cudnnStatus_t, cuDNN 9)", cudnn_statuses(), false);
  out << "\ncuDNN 8 names kept as deprecated aliases\n";
  for (const auto& a : cudnn_aliases()) {
    out << fmt::format("  {:>5}  {:<41} = {}\n", a.code, a.name, find_cudnn_status(a.code)->name);
  }
  list_table(out, "cuBLAS statuses (cublasStatus_t)", cublas_statuses(), false);
}

}  // namespace gpudiag::explain
