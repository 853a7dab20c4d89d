// The raw catalogue entries as embedded by cmake/EmbedFiles.cmake.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpudiag::detail {

struct CatalogueSource {
  std::string_view file_stem;  // "premature-free"
  std::string_view markdown;
};

extern const CatalogueSource kCatalogueSources[];
extern const std::size_t kCatalogueSourceCount;

}  // namespace gpudiag::detail
