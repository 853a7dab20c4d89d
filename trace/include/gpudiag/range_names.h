// Names of host ranges that say what a training loop's time went to, shared
// by the importers that keep such ranges and the analyses that read them.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace gpudiag {

// A wait for the next batch: PyTorch's profiler names the DataLoader's
// "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" (or
// _MultiProcessingDataLoaderIter), and a program's own range
// (record_function, NVTX) says it in words: "data_loading", "Data Loading",
// "load-batch". Case, spaces, '_' and '-' do not count.
inline bool is_data_loading_range(std::string_view name) {
  if (name.starts_with("enumerate(DataLoader)")) return true;
  // Every host range of a trace is asked: no allocation.
  char words[32];
  std::size_t n = 0;
  for (const char c : name) {
    if (c == ' ' || c == '_' || c == '-') continue;
    if (n == sizeof words) return false;
    words[n++] = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  constexpr std::string_view kSaid[] = {"dataloading", "dataload", "loaddata", "loadbatch", "fetchbatch"};
  return std::find(std::begin(kSaid), std::end(kSaid), std::string_view(words, n)) != std::end(kSaid);
}

}  // namespace gpudiag
