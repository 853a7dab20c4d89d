// GD002 float64-leak at run time: kernels that compute in double precision,
// recognised by their demangled names (a `double` template or parameter
// type, cuBLAS/CUTLASS fp64 kernel names, gdrt's `gdrt::binary<double>`).
// Consumer and most data-centre GPUs run FP64 at 1/32..1/64 of the FP32
// rate. Kernels a CPU device ran are left out.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `double` where it makes the kernel itself compute in double: in its
// template arguments (outside any parenthesis), or as a pointer in its own
// parameter list. A `double` deeper inside, e.g. the parameters of a function
// whose lambda the kernel was instantiated with (PyTorch passes scalars as
// double), says nothing about the kernel's arithmetic.
bool has_fp64_type(std::string_view s) {
  static constexpr std::array<std::string_view, 3> words{"double", "double2", "cuDoubleComplex"};
  int paren = 0, angle = 0;
  for (std::size_t p = 0; p < s.size(); ++p) {
    const char c = s[p];
    if (c == '(') ++paren;
    else if (c == ')') --paren;
    else if (c == '<') ++angle;
    else if (c == '>') --angle;
    if (!is_ident(c) || (p > 0 && is_ident(s[p - 1]))) continue;
    std::size_t e = p;
    while (e < s.size() && is_ident(s[e])) ++e;
    const std::string_view word = s.substr(p, e - p);
    if (std::find(words.begin(), words.end(), word) == words.end()) continue;
    if (paren == 0) return true;
    if (paren == 1 && angle == 0) {
      std::size_t q = e;
      while (q < s.size() && (s[q] == ' ' || s.substr(q, 5) == "const")) q += s[q] == ' ' ? 1 : 5;
      if (q < s.size() && (s[q] == '*' || s[q] == '&')) return true;
    }
    p = e - 1;
  }
  return false;
}

bool contains_lower(std::string_view s, std::string_view needle) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(needle) != std::string::npos;
}

}  // namespace

bool is_float64_kernel(std::string_view name) {
  if (has_fp64_type(name)) return true;
  // cuBLAS/cuSOLVER double-precision kernels: dgemm, dgemv, zgemm...; CUTLASS "f64"/"fp64" tags.
  static constexpr std::array<std::string_view, 8> fp64_names{"dgemm", "dgemv", "zgemm", "dtrsm",
                                                               "dsyrk", "_f64_", "fp64", "float64"};
  for (std::string_view n : fp64_names)
    if (contains_lower(name, n)) return true;
  return false;
}

void detect_float64_leak(const DetectContext& ctx, std::vector<Finding>& out) {
  struct Use {
    std::uint64_t count = 0, ns = 0;
    StackId stack = kNoStack;
  };
  std::map<StringId, Use> uses;
  std::unordered_map<StringId, bool> fp64;  // names repeat: classify each once
  std::uint64_t all_ns = 0;
  for (const Kernel& k : ctx.trace.kernels) {
    if (k.device == kHostDevice) continue;  // a CPU device's kernels: float64 costs a CPU little
    all_ns += k.end_ns - k.start_ns;
    auto [it, fresh] = fp64.try_emplace(k.name, false);
    if (fresh) it->second = is_float64_kernel(ctx.trace.str(k.name));
    if (!it->second) continue;
    Use& u = uses[k.name];
    ++u.count;
    u.ns += k.end_ns - k.start_ns;
    if (u.stack == kNoStack) u.stack = k.stack;
  }
  if (uses.empty()) return;
  std::uint64_t fp64_ns = 0;
  for (const auto& [name, u] : uses) fp64_ns += u.ns;
  const double share = all_ns ? static_cast<double>(fp64_ns) / static_cast<double>(all_ns) : 1.0;
  const auto percent = [&](std::uint64_t ns) {
    return all_ns ? fmt::format(", {:.1f}% of kernel time", 100.0 * static_cast<double>(ns) / static_cast<double>(all_ns))
                  : std::string();
  };
  if (share < ctx.options.float64_share) {
    // What they cost decides: a few Float64 kernels at a sliver of the
    // kernel time are worth knowing, not worth fixing first.
    std::vector<std::pair<StringId, Use>> by_time(uses.begin(), uses.end());
    std::sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    std::string names;
    for (std::size_t i = 0; i < by_time.size() && i < ctx.options.max_groups; ++i)
      names += fmt::format("{}'{}'", i ? ", " : "", ctx.trace.str(by_time[i].first));
    if (by_time.size() > ctx.options.max_groups) names += fmt::format(" and {} more", by_time.size() - ctx.options.max_groups);
    Finding f = make_finding(
        ctx, fmt::format("{} kernel{} computed in Float64 for {}{}, below the {:.0f}% of kernel time at which "
                         "this is a warning (--float64-share): {}",
                         by_time.size(), by_time.size() == 1 ? "" : "s", format_duration(fp64_ns), percent(fp64_ns),
                         ctx.options.float64_share * 100.0, names));
    f.severity = Severity::Note;
    f.stack = frames_of(ctx.trace, by_time.front().second.stack);
    out.push_back(std::move(f));
    return;
  }
  for (const auto& [name, u] : uses) {
    Finding f = make_finding(
        ctx, fmt::format("kernel '{}' computes in Float64 ({} launches, {} of GPU time{}); GPUs run FP64 many times "
                         "slower than FP32: find where double data enters (a double literal, np.float64 input, "
                         "torch.float64 tensor) and convert it to float32",
                         ctx.trace.str(name), u.count, format_duration(u.ns), percent(u.ns)));
    f.stack = frames_of(ctx.trace, u.stack);
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
