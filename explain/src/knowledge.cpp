// Merges the per-library tables and finds entries in them.
#include "gpudiag/explain/knowledge.h"

#include <algorithm>
#include <cctype>

#include "cuda_error_tables.h"

namespace gpudiag::explain {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

const std::vector<ErrorEntry>& runtime_table() {
  static const std::vector<ErrorEntry> table = [] {
    std::vector<ErrorEntry> all;
    for (auto part : {detail::cuda_kernel_errors(), detail::cuda_setup_errors(), detail::cuda_api_errors(),
                      detail::cuda_reference_errors()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    std::sort(all.begin(), all.end(), [](const ErrorEntry& a, const ErrorEntry& b) { return a.code < b.code; });
    return all;
  }();
  return table;
}

const ErrorEntry* by_code(std::span<const ErrorEntry> table, int code) {
  auto it = std::find_if(table.begin(), table.end(), [code](const ErrorEntry& e) { return e.code == code; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::string_view to_string(Library library) {
  switch (library) {
    case Library::CudaRuntime: return "CUDA runtime";
    case Library::CudaDriver: return "CUDA driver";
    case Library::Cudnn: return "cuDNN";
    case Library::Cublas: return "cuBLAS";
  }
  return "?";
}

std::span<const ErrorEntry> cuda_runtime_errors() { return runtime_table(); }

const ErrorEntry* find_cuda_runtime_error(int code) { return by_code(cuda_runtime_errors(), code); }

const ErrorEntry* find_cuda_runtime_error(std::string_view name) {
  for (const auto& e : cuda_runtime_errors()) {
    if (iequals(e.name, name)) return &e;
  }
  return nullptr;
}

std::string_view driver_name_for(int code) {
  for (const auto& d : cuda_driver_codes()) {
    if (d.code == code) return d.name;
  }
  return {};
}

const ErrorEntry* find_cuda_driver_error(int code) {
  if (driver_name_for(code).empty()) return nullptr;
  if (const auto* twin = find_cuda_runtime_error(code)) return twin;
  return by_code(cuda_driver_only_errors(), code);
}

const ErrorEntry* find_cudnn_status(int code) { return by_code(cudnn_statuses(), code); }
const ErrorEntry* find_cublas_status(int code) { return by_code(cublas_statuses(), code); }

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!line.empty()) out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace gpudiag::explain
