// Which shared preamble each CUDA file of one compile command gets. A
// preamble holds clang's CUDA wrapper and gpulint's own -include, which every
// file of the command has, and only system headers that each file it serves
// includes at its top itself (top_system_includes): no file sees a
// declaration or a macro of a header it does not include.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpudiag::lint {

struct PreamblePlan {
  std::vector<std::vector<std::string>> preambles;  // the system includes of each, in order
  std::vector<int> preamble_of;                     // per file: its preamble, -1 for none
};

// What parsing a set of headers costs a file that parses them itself (in
// any unit: only how sets compare matters).
using HeaderSetCost = std::function<std::uint64_t(const std::vector<std::string>& headers)>;

// `tops[i]` is file i's top system includes. Picks, one after another, the
// set of headers whose sharing saves the most: for each file that includes
// all of it, its `cost` (by default its number of headers) beyond what the
// file's preamble so far saves, less building it once. The sets are the
// files' own and the headers each two have in common; the files that gain
// move to it. The files left when no set saves any share the preamble of
// the wrapper alone when there are two or more of them.
PreamblePlan plan_preambles(const std::vector<std::vector<std::string>>& tops, const HeaderSetCost& cost = {});

}  // namespace gpudiag::lint
