// The self-contained HTML page: report/page/report.html with report.css,
// the data and report.js spliced in at its markers, so the CSS and the
// script stay inline (the page's Content-Security-Policy allows nothing
// else) and the page needs no network. The data sits in a
// <script type="application/json"> element (escaped by json_for_script) and
// the script builds every node from it with textContent, so names from the
// trace (kernel names are untrusted) are never parsed as HTML.
#include <ostream>
#include <string>

#include "gpudiag/report/report.h"
#include "page_template.h"

namespace gpudiag {

void write_html(std::ostream& out, const Trace& trace, const Report& report, const HtmlOptions& options) {
  const detail::PageTemplate page = detail::cut_page_template(detail::page_file("report.html"));
  const std::string data = json_for_script(html_data(trace, report, options));
  out << page.to_css << detail::page_file("report.css") << page.to_data << data << page.to_script
      << detail::page_file("common.js") << detail::page_file("report.js") << page.rest;
}

}  // namespace gpudiag
