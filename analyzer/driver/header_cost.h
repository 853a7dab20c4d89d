// What parsing a system header costs, estimated before anything is parsed:
// the bytes of the files it reaches through #include lines read as text
// (each one followed, whatever conditional it is in, so an overestimate),
// found as the compile command's header search finds them. It ranks what a
// shared preamble (preamble_plan.h) saves: one header of a template
// library (Thrust's device_vector.h, some seconds) outweighs a dozen C
// headers the CUDA wrapper has already read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "header_search.h"

namespace gpudiag::lint {

class HeaderCosts {
 public:
  // Headers found as `list`, the search of a command run in `directory`,
  // finds them. What the command pre-includes (the CUDA wrapper, gpulint's
  // own header) is read by every file already: it costs nothing more.
  HeaderCosts(const HeaderSearchList& list, const std::string& directory);
  ~HeaderCosts();
  HeaderCosts(const HeaderCosts&) = delete;
  HeaderCosts& operator=(const HeaderCosts&) = delete;

  // The bytes `headers` ("<thrust/device_vector.h>", "\"cublas_v2.h\"", as
  // a file spells them) reach together beyond what is pre-included, each
  // file counted once; a header the search does not find costs nothing.
  std::uint64_t bytes(const std::vector<std::string>& headers);

 private:
  struct Search;
  std::unique_ptr<Search> search_;
};

}  // namespace gpudiag::lint
