#include "page_template.h"

#include <stdexcept>
#include <string>

namespace gpudiag::detail {

std::string_view page_file(std::string_view name) {
  for (std::size_t i = 0; i < kPageFileCount; ++i)
    if (kPageFiles[i].name == name) return kPageFiles[i].text;
  throw std::logic_error("report page: " + std::string(name) + " is not embedded");
}

PageTemplate cut_page_template(std::string_view html) {
  const std::string_view markers[] = {kCssMarker, kDataMarker, kScriptMarker};
  std::string_view parts[4];
  std::size_t from = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string_view m = markers[i];
    const std::size_t at = html.find(m);
    if (at == std::string_view::npos)
      throw std::logic_error("report page: report.html lacks the marker " + std::string(m));
    if (html.find(m, at + 1) != std::string_view::npos)
      throw std::logic_error("report page: report.html has the marker " + std::string(m) + " more than once");
    if (at < from)
      throw std::logic_error("report page: report.html has the marker " + std::string(m) + " before " +
                             std::string(markers[i - 1]));
    parts[i] = html.substr(from, at - from);
    from = at + m.size();
  }
  parts[3] = html.substr(from);
  return {parts[0], parts[1], parts[2], parts[3]};
}

}  // namespace gpudiag::detail
