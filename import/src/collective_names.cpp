#include "collective_names.h"

#include <cctype>
#include <cmath>
#include <string>
#include <utility>

#include "gpudiag/trace.h"  // demangle()

namespace gpudiag::import {
namespace {

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

bool strip_prefix(std::string& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.erase(0, prefix.size());
  return true;
}

// Lower-case names without underscores, the form every source's spelling
// reduces to, and the one spelling of each.
constexpr std::pair<std::string_view, std::string_view> kOps[] = {
    {"allreduce", "all_reduce"},
    {"allgather", "all_gather"},
    {"reducescatter", "reduce_scatter"},
    {"broadcast", "broadcast"},
    {"bcast", "broadcast"},  // ncclBcast
    {"reduce", "reduce"},
    {"alltoall", "all_to_all"},
    {"alltoallv", "all_to_all"},
    {"barrier", "barrier"},
    {"monitoredbarrier", "barrier"},
    {"send", "send"},
    {"recv", "recv"},
    {"recvanysource", "recv"},
    {"gather", "gather"},
    {"scatter", "scatter"},
    {"sendrecv", "send_recv"},
};

// Variants of one collective that differ only in how its tensors are passed
// (c10d's "_allgather_base", "allreduce_coalesced",
// "all_gather_into_tensor_coalesced", "reduce_scatter_tensor").
constexpr std::string_view kVariantSuffixes[] = {"coalesced", "intotensor", "tensor", "base", "single"};

}  // namespace

std::string_view collective_op(std::string_view name) {
  std::string s = lower(name);
  for (std::string_view ns : {"_c10d_functional::", "c10d_functional::", "c10d::", "gloo:", "nccl:"})
    if (strip_prefix(s, ns)) break;
  strip_prefix(s, "nccl");  // NCCL's own API names: ncclAllReduce
  std::erase(s, '_');
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (std::string_view suffix : kVariantSuffixes)
      if (s.size() > suffix.size() && s.ends_with(suffix)) {
        s.resize(s.size() - suffix.size());
        stripped = true;
      }
  }
  for (const auto& [spelling, op] : kOps)
    if (s == spelling) return op;
  return {};
}

std::optional<std::string_view> nccl_kernel_op(std::string_view name) {
  // A launch call names its kernel as the driver does, mangled.
  if (name.starts_with("_Z")) {
    const std::string demangled = demangle(name);
    return demangled != name ? nccl_kernel_op(demangled) : std::nullopt;
  }
  if (name.starts_with("void ")) name.remove_prefix(5);
  if (!name.starts_with("nccl")) return std::nullopt;
  name = name.substr(0, name.find_first_of("(<"));
  const auto kernel = name.find("Kernel");
  if (kernel == std::string_view::npos) return std::nullopt;
  // Since NCCL 2.9 the collective follows "Kernel_": ncclKernel_AllReduce_RING_LL_Sum_float,
  // ncclDevKernel_SendRecv; "Generic" is a group of several.
  if (name.size() > kernel + 7 && name[kernel + 6] == '_') {
    std::string_view word = name.substr(kernel + 7);
    word = word.substr(0, word.find('_'));
    if (word == "Generic") return std::string_view();
    if (const std::string_view op = collective_op(word); !op.empty()) return op;
  }
  // Before, it came first: ncclAllReduceRingLLKernel_sum_f32, ncclBroadcastTreeKernel_copy_i8.
  const std::string_view head = name.substr(4, kernel - 4);
  for (std::string_view word : {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "Send", "Recv"})
    if (head.starts_with(word)) return collective_op(word);
  return std::string_view();
}

std::uint64_t dtype_bytes(std::string_view dtype) {
  std::string s = lower(dtype);
  for (std::string_view ns : {"c10::", "at::", "torch."})
    if (strip_prefix(s, ns)) break;
  static constexpr std::pair<std::string_view, std::uint64_t> kSizes[] = {
      {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}, {"half", 2}, {"float16", 2},
      {"bfloat16", 2}, {"long", 8}, {"int64", 8}, {"long int", 8}, {"int64_t", 8}, {"long long", 8},
      {"long long int", 8}, {"int", 4}, {"int32", 4}, {"int32_t", 4}, {"short", 2}, {"int16", 2},
      {"short int", 2}, {"int16_t", 2}, {"char", 1}, {"signed char", 1}, {"int8", 1}, {"int8_t", 1},
      {"byte", 1}, {"uint8", 1}, {"unsigned char", 1}, {"uint8_t", 1}, {"bool", 1}, {"qint8", 1},
      {"quint8", 1}, {"qint32", 4}, {"uint16", 2}, {"uint32", 4}, {"uint64", 8}, {"complexhalf", 4},
      {"complex32", 4}, {"complexfloat", 8}, {"complex64", 8}, {"complexdouble", 16}, {"complex128", 16},
      {"complex<c10::half>", 4}, {"complex<float>", 8}, {"complex<double>", 16}};
  for (const auto& [name, bytes] : kSizes)
    if (s == name) return bytes;
  if (s.starts_with("float8")) return 1;  // Float8_e4m3fn, Float8_e5m2, ...
  return 0;
}

std::uint64_t element_bytes(double elements, std::string_view dtype) {
  const std::uint64_t size = dtype_bytes(dtype);
  // 2^60 elements is more memory than any machine has: the field is garbage.
  if (size == 0 || !std::isfinite(elements) || elements < 1 || elements > 0x1p60) return 0;
  return static_cast<std::uint64_t>(elements) * size;
}

}  // namespace gpudiag::import
