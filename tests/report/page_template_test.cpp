// The page template as compiled in (report/page/): each marker where the
// CSS, the data and the script go is there once and in order, and the files
// spliced at them cannot end their inline elements early.
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "page_template.h"

namespace gpudiag::detail {
namespace {

std::size_t count(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// What cut_page_template() says of `html`, or "" when it takes it.
std::string refusal(const std::string& html) {
  try {
    cut_page_template(html);
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

TEST(PageTemplate, TheEmbeddedPageHasEachMarkerOnceInOrder) {
  const std::string_view html = page_file("report.html");
  for (const std::string_view m : {kCssMarker, kDataMarker, kScriptMarker}) EXPECT_EQ(count(html, m), 1u) << m;
  EXPECT_EQ(refusal(std::string(html)), "");
}

TEST(PageTemplate, AMissingRepeatedOrMisplacedMarkerIsRefused) {
  const std::string html(page_file("report.html"));
  auto without = [&](std::string_view m) { return std::string(html).erase(html.find(m), m.size()); };
  auto with_another = [&](std::string_view m) { return html + std::string(m); };
  EXPECT_EQ(refusal(without(kCssMarker)), "report page: report.html lacks the marker <!-- gpudiag:css -->");
  EXPECT_EQ(refusal(without(kDataMarker)), "report page: report.html lacks the marker <!-- gpudiag:data -->");
  EXPECT_EQ(refusal(without(kScriptMarker)), "report page: report.html lacks the marker <!-- gpudiag:js -->");
  EXPECT_EQ(refusal(with_another(kCssMarker)),
            "report page: report.html has the marker <!-- gpudiag:css --> more than once");
  EXPECT_EQ(refusal(with_another(kDataMarker)),
            "report page: report.html has the marker <!-- gpudiag:data --> more than once");
  EXPECT_EQ(refusal(with_another(kScriptMarker)),
            "report page: report.html has the marker <!-- gpudiag:js --> more than once");
  EXPECT_EQ(refusal(std::string(kDataMarker) + std::string(kCssMarker) + std::string(kScriptMarker)),
            "report page: report.html has the marker <!-- gpudiag:data --> before <!-- gpudiag:css -->");
}

TEST(PageTemplate, CutsAroundTheMarkersAndKeepsEverythingElse) {
  const PageTemplate p = cut_page_template("a<!-- gpudiag:css -->b\n<!-- gpudiag:data -->c<!-- gpudiag:js -->\nd");
  EXPECT_EQ(p.to_css, "a");
  EXPECT_EQ(p.to_data, "b\n");
  EXPECT_EQ(p.to_script, "c");
  EXPECT_EQ(p.rest, "\nd");
}

// Inline, a "</style" in the CSS or a "</script" in the script would end
// its element and let the rest be parsed as HTML.
TEST(PageTemplate, TheStyleAndScriptCannotEndTheirElements) {
  EXPECT_EQ(lower(page_file("report.css")).find("</style"), std::string::npos);
  for (const char* script : {"common.js", "report.js", "job.js"})
    EXPECT_EQ(lower(page_file(script)).find("</script"), std::string::npos) << script;
}

TEST(PageTemplate, AFileNotEmbeddedIsAnError) {
  EXPECT_FALSE(page_file("report.js").empty());
  EXPECT_THROW(page_file("report.svg"), std::logic_error);
}

}  // namespace
}  // namespace gpudiag::detail
