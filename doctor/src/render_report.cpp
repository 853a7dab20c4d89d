// The doctor report for people (text) and for scripts (JSON).
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/doctor/report.h"

namespace gpudiag::doctor {
namespace {

std::string gib(std::uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30)); }

std::string library_line(const LibraryInfo& lib, const std::string& version_text) {
  if (!lib.loaded) {
    return fmt::format("not found ({} places tried; last error: {})", lib.tried.size(),
                       lib.load_error.empty() ? "none" : lib.load_error);
  }
  return fmt::format("{} ({})", version_text, lib.library);
}

std::string_view severity_name(Problem::Severity s) { return s == Problem::Severity::Error ? "error" : "warning"; }

struct Paint {
  bool color;
  std::string operator()(std::string_view code, std::string_view text) const {
    return color ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : std::string(text);
  }
};

}  // namespace

void render_text(std::ostream& out, const Report& r, bool color) {
  const Paint paint{color};
  const Facts& f = r.facts;
  out << paint(r.gpu_usable ? "1;32" : "1;31", r.verdict) << "\n\n";

  auto row = [&](std::string_view label, const std::string& value) {
    out << paint("1", fmt::format("{:<22}", label)) << value << '\n';
  };
  if (f.driver.loaded) {
    std::string init = !f.driver.init_result ? "cuInit not called"
                       : *f.driver.init_result == 0
                           ? "cuInit OK"
                           : fmt::format("cuInit failed ({})", *f.driver.init_result);
    row("NVIDIA driver", fmt::format("supports CUDA {}, {} ({})", cuda_version_string(f.driver.version), init,
                                     f.driver.library));
  } else {
    row("NVIDIA driver", fmt::format("not found ({})", f.driver.load_error.empty() ? "libcuda.so.1" : f.driver.load_error));
  }
  if (f.driver.devices.empty()) {
    row("GPUs", "none");
  } else {
    for (const auto& d : f.driver.devices) {
      std::string text = fmt::format("cuda:{}  {}  compute capability {}.{}  {}", d.ordinal, d.name, d.cc_major,
                                     d.cc_minor, gib(d.total_memory));
      if (!d.error.empty()) text += fmt::format("  ({})", d.error);
      row(d.ordinal == 0 ? "GPUs" : "", text);
    }
  }
  row("CUDA runtime (built)", f.built_runtime_version > 0 ? cuda_version_string(f.built_runtime_version)
                                                          : std::string("none: gpudiag was built without CUDA"));
  row("CUDA runtime (loaded)", library_line(f.cuda_runtime, fmt::format("libcudart {}", cuda_version_string(f.cuda_runtime.version))));
  row("cuDNN", library_line(f.cudnn, fmt::format("{}, built for CUDA {}", cudnn_version_string(f.cudnn.version),
                                                 cuda_version_string(f.cudnn.cudart_version))));
  row("CUPTI", library_line(f.cupti, fmt::format("API version {}", f.cupti.version)));
  if (!f.injection_library.tried.empty()) row("gpudiag tracer", library_line(f.injection_library, "loads as the driver loads it"));
  row("CUDA_VISIBLE_DEVICES", r.visible.description);

  if (!r.problems.empty()) {
    out << '\n' << paint("1", fmt::format("Problems ({})", r.problems.size())) << '\n';
    for (const auto& p : r.problems) {
      const bool error = p.severity == Problem::Severity::Error;
      out << "  " << paint(error ? "1;31" : "1;33", std::string(severity_name(p.severity)) + ":") << ' ' << p.title
          << '\n';
      out << "    why: " << p.detail << '\n';
      out << "    fix: " << p.fix << '\n';
    }
  }
  for (const auto& note : r.notes) out << '\n' << paint("1", "note:") << ' ' << note << '\n';
}

nlohmann::json to_json(const Report& r) {
  using nlohmann::json;
  const Facts& f = r.facts;
  auto library = [](const LibraryInfo& lib) {
    json j = {{"found", lib.loaded}, {"version", lib.version}};
    if (lib.loaded) {
      j["path"] = lib.library;
    } else {
      j["tried"] = lib.tried;
      j["error"] = lib.load_error;
    }
    return j;
  };
  json devices = json::array();
  for (const auto& d : f.driver.devices) {
    json dj = {{"ordinal", d.ordinal},
               {"name", d.name},
               {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
               {"total_memory_bytes", d.total_memory}};
    if (!d.error.empty()) dj["error"] = d.error;
    devices.push_back(dj);
  }
  json driver = {{"found", f.driver.loaded}};
  if (f.driver.loaded) {
    driver["path"] = f.driver.library;
    driver["cuda_version"] = f.driver.version;
    driver["cuda_version_string"] = cuda_version_string(f.driver.version);
    driver["init_result"] = f.driver.init_result ? json(*f.driver.init_result) : json(nullptr);
    driver["device_count"] = f.driver.device_count;
  } else {
    driver["error"] = f.driver.load_error;
  }
  json cudnn = library(f.cudnn);
  if (f.cudnn.loaded) {
    cudnn["version_string"] = cudnn_version_string(f.cudnn.version);
    cudnn["cudart_version"] = f.cudnn.cudart_version;
  }
  json runtime = library(f.cuda_runtime);
  runtime["built_version"] = f.built_runtime_version;
  runtime["built_version_string"] =
      f.built_runtime_version > 0 ? cuda_version_string(f.built_runtime_version) : std::string("none");
  json problems = json::array();
  for (const auto& p : r.problems) {
    problems.push_back({{"severity", severity_name(p.severity)}, {"title", p.title}, {"detail", p.detail}, {"fix", p.fix}});
  }
  json visible = {{"set", r.visible.set},
                  {"value", f.cuda_visible_devices ? json(*f.cuda_visible_devices) : json(nullptr)},
                  {"hides_all", r.visible.hides_all},
                  {"by_uuid", r.visible.by_uuid},
                  {"selected", r.visible.selected},
                  {"ignored", r.visible.ignored},
                  {"description", r.visible.description}};
  return {{"gpu_usable", r.gpu_usable},
          {"verdict", r.verdict},
          {"driver", driver},
          {"devices", devices},
          {"cuda_runtime", runtime},
          {"cudnn", cudnn},
          {"cupti", library(f.cupti)},
          {"injection_library", library(f.injection_library)},
          {"cuda_visible_devices", visible},
          {"problems", problems},
          {"notes", r.notes},
          {"fallback_device", r.gpu_usable ? json(nullptr) : json("emu")}};
}

}  // namespace gpudiag::doctor
