// GD006 unchecked-cuda-error at run time: API calls that returned an error.
// The program went on, so whatever it did next worked on a failed call.
#include <map>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {

void detect_unchecked_cuda_error(const DetectContext& ctx, std::vector<Finding>& out) {
  const Trace& t = ctx.trace;
  struct Group {
    std::uint64_t count = 0;
    std::size_t first = 0;
  };
  std::map<std::pair<StringId, std::int32_t>, Group> groups;
  for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
    const ApiCall& a = t.api_calls[i];
    if (a.status == 0) continue;
    auto [it, fresh] = groups.try_emplace({a.name, a.status});
    if (fresh) it->second.first = i;
    ++it->second.count;
  }
  for (const auto& [key, g] : groups) {
    const ApiCall& a = t.api_calls[g.first];
    Finding f = make_finding(
        "GD006", fmt::format("{} returned error {} ({} call{}, {}); check the status of every CUDA call (and "
                             "cudaGetLastError after launches): later calls may fail with a stale error or work on "
                             "garbage. `gpudiag explain {}` tells what it means",
                             t.str(a.name), a.status, g.count, g.count == 1 ? "" : "s", to_string(a.domain), a.status));
    f.stack = frames_of(t, a.stack);
    out.push_back(std::move(f));
  }
}

}  // namespace gpudiag
