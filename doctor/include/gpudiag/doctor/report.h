// From facts to a verdict: is a GPU usable, and what is wrong, each problem
// with its fix. Rendered as text for people and JSON for scripts.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpudiag/doctor/probe.h"

namespace gpudiag::doctor {

// 13000 -> "13.0", 12040 -> "12.4" (the encoding of cuDriverGetVersion and CUDART_VERSION).
std::string cuda_version_string(long long version);
int cuda_major(long long version);
// cudnnGetVersion: 91900 -> "9.19.0" (cuDNN 9: major*10000 + minor*100 + patch);
// 8907 -> "8.9.7" (cuDNN 8 and older: major*1000 + minor*100 + patch).
std::string cudnn_version_string(long long version);
// The first driver branch that supports a CUDA major on Linux ("580" for 13); empty if unknown.
std::string_view minimum_driver_branch(int cuda_major);
// The oldest compute capability a CUDA major builds for, as major*10+minor
// (13 -> 75: CUDA 13 dropped Maxwell, Pascal and Volta); 0 if unknown.
int minimum_compute_capability(int cuda_major);

// What CUDA_VISIBLE_DEVICES selects. CUDA reads the comma-separated list up
// to the first entry that is not a valid ordinal or GPU/MIG UUID; what
// follows is ignored, and an invalid first entry hides every GPU.
struct VisibleDevices {
  bool set = false;
  bool hides_all = false;
  bool by_uuid = false;                // GPU-... / MIG-... entries
  std::vector<std::string> selected;   // the entries CUDA will use, in order (they become 0, 1, ...)
  std::vector<std::string> ignored;    // the first invalid entry and everything after it
  std::string description;             // one sentence for the report
};
VisibleDevices parse_visible_devices(const std::optional<std::string>& value);

struct Problem {
  enum class Severity { Error, Warning };
  Severity severity = Severity::Error;
  std::string title;   // what is wrong, one line
  std::string detail;  // why it matters
  std::string fix;     // what to do
};

struct Report {
  bool gpu_usable = false;
  std::string verdict;  // the first line: the answer and its reason
  Facts facts;
  VisibleDevices visible;
  std::vector<Problem> problems;
  std::vector<std::string> notes;  // useful facts that are not problems (the emu fallback)
};

Report diagnose(const Facts& facts);

void render_text(std::ostream& out, const Report& report, bool color);
nlohmann::json to_json(const Report& report);

// 0 when a GPU is usable, 1 when not.
inline int exit_code(const Report& report) { return report.gpu_usable ? 0 : 1; }

}  // namespace gpudiag::doctor
