// What orders work on one stream before a free on another, as far as a
// trace shows it (GD004's checks of kernel arguments).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpudiag/detect/detect.h"
#include "gpudiag/trace.h"

namespace gpudiag {

// Whether any of the sorted times lies in [from, to].
bool any_in(const std::vector<std::uint64_t>& sorted, std::uint64_t from, std::uint64_t to);

// The default stream, seen as the stream of blocking copies and memsets,
// which run on it: the trace does not name it otherwise. The legacy default
// stream waits for the work of every blocking stream, and theirs for its,
// with no event in the trace to show it. A stream that frees memory but ran
// no recorded work may be it too (cudaFreeAsync(p, 0) in a program that
// makes no blocking copy): it is counted as one, so that no finding rests on
// not knowing.
std::unordered_set<std::uint64_t> default_streams(const Trace& t);

// What may have ordered work on one stream before a free on another: the
// default stream's implicit ordering, and when the host or a stream waited,
// by what it waited for. The trace does not say which work an event stood
// for, so every wait that may have covered a launch counts: a device
// synchronisation, a synchronisation of the launch's stream or of an event,
// an event wait of the freeing stream, and any synchronising call or query
// that succeeded without a Sync record telling what it waited for.
class Orderings {
 public:
  explicit Orderings(const Trace& t);

  // Whether work launched at `from` on `launch_stream` of `device` may have
  // been ordered before the free that `free_stream` ordered at `to`: either
  // is the default stream, or a wait that may cover it began in between.
  bool may_order(std::uint64_t from, std::uint64_t to, std::int32_t device, std::uint64_t launch_stream,
                 std::uint64_t free_stream) const {
    return default_.count(launch_stream) || default_.count(free_stream) ||
           waited_between(from, to, device, launch_stream, free_stream);
  }

  // The same, for streams known not to wait for the legacy default stream
  // implicitly (PyTorch creates its streams non-blocking): only a wait orders them.
  bool waited_between(std::uint64_t from, std::uint64_t to, std::int32_t device, std::uint64_t launch_stream,
                      std::uint64_t free_stream) const {
    return any_in(any_, from, to) || in(device_, device, from, to) || in(stream_, launch_stream, from, to) ||
           in(waited_, free_stream, from, to);
  }

 private:
  template <class Key>
  static bool in(const std::unordered_map<Key, std::vector<std::uint64_t>>& by, Key key, std::uint64_t from,
                 std::uint64_t to) {
    const auto it = by.find(key);
    return it != by.end() && any_in(it->second, from, to);
  }

  std::unordered_set<std::uint64_t> default_;
  std::vector<std::uint64_t> any_;                                        // may order every launch
  std::unordered_map<std::int32_t, std::vector<std::uint64_t>> device_;   // the host waited for a device
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> stream_;  // the host waited for a stream
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> waited_;  // a stream waited for an event
};

}  // namespace gpudiag
