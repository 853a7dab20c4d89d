// Version numbers as CUDA, cuDNN and the driver encode them, and the
// CUDA_VISIBLE_DEVICES syntax.
#include <algorithm>
#include <cctype>
#include <sstream>

#include <fmt/format.h>

#include "gpudiag/doctor/report.h"

namespace gpudiag::doctor {

std::string cuda_version_string(long long version) {
  if (version <= 0) return "unknown";
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

int cuda_major(long long version) { return static_cast<int>(version / 1000); }

std::string cudnn_version_string(long long version) {
  if (version <= 0) return "unknown";
  if (version >= 90000) return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, (version % 1000) / 100, version % 100);
}

std::string_view minimum_driver_branch(int major) {
  // The first Linux driver of each CUDA major (CUDA release notes, "minimum
  // required driver version" for minor version compatibility).
  switch (major) {
    case 11: return "450";
    case 12: return "525";
    case 13: return "580";
    default: return {};
  }
}

int minimum_compute_capability(int major) {
  switch (major) {
    case 11: return 35;
    case 12: return 50;
    case 13: return 75;
    default: return 0;
  }
}

namespace {

bool is_ordinal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool is_uuid(const std::string& s) { return s.starts_with("GPU-") || s.starts_with("MIG-"); }

std::string trimmed(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

VisibleDevices parse_visible_devices(const std::optional<std::string>& value) {
  VisibleDevices v;
  if (!value) {
    v.description = "CUDA_VISIBLE_DEVICES is not set: every GPU is visible.";
    return v;
  }
  v.set = true;
  std::vector<std::string> entries;
  std::stringstream in(*value);
  for (std::string entry; std::getline(in, entry, ',');) entries.push_back(trimmed(entry));

  std::size_t i = 0;
  for (; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (!is_ordinal(e) && !is_uuid(e)) break;
    v.by_uuid = v.by_uuid || is_uuid(e);
    v.selected.push_back(e);
  }
  for (std::size_t j = i; j < entries.size(); ++j) v.ignored.push_back(entries[j]);
  v.hides_all = v.selected.empty();

  if (v.hides_all) {
    v.description = value->empty()
                        ? "CUDA_VISIBLE_DEVICES is set to an empty string: it hides every GPU."
                        : fmt::format("CUDA_VISIBLE_DEVICES={} hides every GPU ('{}' is not a GPU index or UUID).",
                                      *value, entries.empty() ? *value : entries.front());
    return v;
  }
  std::string list;
  for (std::size_t k = 0; k < v.selected.size(); ++k) {
    list += fmt::format("{}{} as cuda:{}", k ? ", " : "", v.selected[k], k);
  }
  v.description = fmt::format("CUDA_VISIBLE_DEVICES={} shows only {} GPU(s): {}.", *value, v.selected.size(), list);
  if (i < entries.size()) {
    v.description += fmt::format(" '{}' is not a valid entry, so it and everything after it are ignored.", entries[i]);
  }
  if (v.by_uuid) v.description += " GPUs are selected by UUID (nvidia-smi -L lists them).";
  return v;
}

}  // namespace gpudiag::doctor
