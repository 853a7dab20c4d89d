// Which shared preamble each CUDA file of one compile command gets. A
// preamble holds clang's CUDA wrapper and gpulint's own -include, which every
// file of the command has, and only system headers that each file it serves
// includes at its top itself (top_system_includes): no file sees a
// declaration or a macro of a header it does not include.
#pragma once

#include <string>
#include <vector>

namespace gpudiag::lint {

struct PreamblePlan {
  std::vector<std::vector<std::string>> preambles;  // the system includes of each, in order
  std::vector<int> preamble_of;                     // per file: its preamble, -1 for none
};

// `tops[i]` is file i's top system includes. Picks, one after another, the
// set of headers whose sharing saves the most header parses (its size times
// the files beyond the first that include all of it), among the files' own
// sets and the headers each two have in common, for the files not served
// yet; the files left when no set saves any share the preamble of the wrapper
// alone when there are two or more of them.
PreamblePlan plan_preambles(const std::vector<std::vector<std::string>>& tops);

}  // namespace gpudiag::lint
