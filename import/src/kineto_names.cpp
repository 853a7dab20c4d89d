#include "kineto_names.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace gpudiag::import {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

MemKind parse_mem_kind(std::string_view word) {
  const std::string w = lower(trim(word));
  if (w == "pageable") return MemKind::Pageable;
  if (w == "pinned") return MemKind::Pinned;
  if (w == "device") return MemKind::Device;
  if (w == "managed") return MemKind::Managed;
  if (w == "array") return MemKind::Array;
  return MemKind::Unknown;
}

CopyDescription parse_memcpy_name(std::string_view name) {
  CopyDescription d;
  const std::string n(name);
  if (n.find("HtoD") != std::string::npos) d.copy = CopyKind::HtoD;
  else if (n.find("DtoH") != std::string::npos) d.copy = CopyKind::DtoH;
  else if (n.find("DtoD") != std::string::npos) d.copy = CopyKind::DtoD;
  else if (n.find("HtoH") != std::string::npos) d.copy = CopyKind::HtoH;
  else if (n.find("PtoP") != std::string::npos) d.copy = CopyKind::PtoP;
  const auto open = n.find('('), arrow = n.find("->"), close = n.rfind(')');
  if (open != std::string::npos && arrow != std::string::npos && close != std::string::npos && open < arrow && arrow < close) {
    d.src = parse_mem_kind(std::string_view(n).substr(open + 1, arrow - open - 1));
    d.dst = parse_mem_kind(std::string_view(n).substr(arrow + 2, close - arrow - 2));
  }
  // The device side of a directed copy is device memory even when unnamed.
  if (d.dst == MemKind::Unknown && d.copy == CopyKind::HtoD) d.dst = MemKind::Device;
  if (d.src == MemKind::Unknown && d.copy == CopyKind::DtoH) d.src = MemKind::Device;
  if (d.copy == CopyKind::DtoD || d.copy == CopyKind::PtoP) {
    if (d.src == MemKind::Unknown) d.src = MemKind::Device;
    if (d.dst == MemKind::Unknown) d.dst = MemKind::Device;
  }
  if (d.copy == CopyKind::Unknown) d.copy = copy_kind_of(d.src, d.dst);
  return d;
}

MemKind parse_memset_name(std::string_view name) {
  const auto open = name.find('('), close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return MemKind::Unknown;
  return parse_mem_kind(name.substr(open + 1, close - open - 1));
}

std::optional<SyncKind> parse_sync_name(std::string_view name) {
  const std::string n = lower(trim(name));
  if (n == "stream sync") return SyncKind::Stream;
  if (n == "event sync") return SyncKind::Event;
  if (n == "context sync") return SyncKind::Context;
  if (n == "device sync") return SyncKind::Device;
  if (n == "stream wait event") return SyncKind::StreamWaitEvent;
  if (auto s = sync_of_runtime_call(name)) return s;
  if (n.find("sync") != std::string::npos) return SyncKind::Unknown;
  return std::nullopt;
}

std::optional<SyncKind> sync_of_runtime_call(std::string_view name) {
  if (name == "cudaDeviceSynchronize" || name == "cudaThreadSynchronize") return SyncKind::Device;
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize") return SyncKind::Stream;
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize") return SyncKind::Event;
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") return SyncKind::StreamWaitEvent;
  if (name == "cuCtxSynchronize") return SyncKind::Context;
  return std::nullopt;
}

}  // namespace gpudiag::import
