// The page's files (report/page/) as cmake/EmbedFiles.cmake compiles them in,
// and report.html cut at the markers where the CSS, the data and the script
// go. A marker is replaced by its text verbatim, nothing around it changes.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpudiag::detail {

struct PageFile {
  std::string_view name;  // "report.css"
  std::string_view text;
};

extern const PageFile kPageFiles[];
extern const std::size_t kPageFileCount;

// The embedded report/page/<name>; throws std::logic_error for a name that is not embedded.
std::string_view page_file(std::string_view name);

inline constexpr std::string_view kCssMarker = "<!-- gpudiag:css -->";
inline constexpr std::string_view kDataMarker = "<!-- gpudiag:data -->";
inline constexpr std::string_view kScriptMarker = "<!-- gpudiag:js -->";

// The page is to_css + report.css + to_data + the data + to_script + common.js + report.js + rest.
struct PageTemplate {
  std::string_view to_css, to_data, to_script, rest;
};

// Throws std::logic_error naming the marker that is missing, there more than
// once, or out of order: a page spliced from such a template would be broken.
PageTemplate cut_page_template(std::string_view html);

}  // namespace gpudiag::detail
