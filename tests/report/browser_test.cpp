// The HTML page in real headless Chromium: loads with no console errors,
// draws the expected number of series, is screenshotted, and runs nothing
// from names in the trace.

#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "gpudiag/report/report.h"
#include "run_command.h"
#include "trace_builder.h"

namespace gpudiag {
namespace {

namespace fs = std::filesystem;
using namespace gpudiag::testing;

constexpr const char* kChromium = "/usr/bin/chromium";

fs::path out_dir() {
  const fs::path d = fs::path(GPUDIAG_BINARY_DIR) / "tests" / "report" / "browser";
  fs::create_directories(d);
  return d;
}

// What `cmd` prints on its standard output (Chromium logs to the standard error).
std::string capture(const std::string& cmd) { return test::run_command(cmd, false).out; }

struct Page {
  std::string dom;
  std::string console;  // Chromium's log lines of console messages
};

Page load(const fs::path& html, const std::string& fragment = "") {
  const fs::path log = html.string() + ".log";
  const std::string flags = " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 ";
  Page p;
  p.dom = capture("timeout 120 " + std::string(kChromium) + flags + "--dump-dom 'file://" + html.string() + fragment + "' 2>'" +
                  log.string() + "'");
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos) p.console += line + "\n";
  return p;
}

fs::path write_page(const Trace& t, const std::string& name, nlohmann::json* data = nullptr) {
  const Report r = analyze(t);
  const fs::path path = out_dir() / name;
  std::ofstream out(path, std::ios::binary);
  write_html(out, t, r);
  if (data) *data = html_data(t, r);
  return path;
}

std::size_t expected_series(const nlohmann::json& data) {
  std::size_t n = 0;
  for (const auto& d : data["devices"]) n += d["expected_series"].get<std::size_t>();
  return n;
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed (apt-get install chromium)";
  }
};

TEST_F(Browser, RealTracePageLoadsWithoutConsoleErrorsAndDrawsEverySeries) {
  const std::string trace = std::string(GPUDIAG_SHARED_DATA_DIR) + "/traces/h100-vit-falconsai.trace.json.gz";
  if (!fs::exists(trace)) GTEST_SKIP() << "no " << trace;
  nlohmann::json data;
  const fs::path html = write_page(load_trace(trace), "h100-vit.html", &data);
  const Page page = load(html);
  EXPECT_NE(page.dom.find("data-ready=\"1\""), std::string::npos) << "the page script did not finish";
  EXPECT_EQ(page.console, "") << "console output while loading";
  const std::size_t expected = expected_series(data);
  ASSERT_GT(expected, 0u);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(page.dom, m, std::regex("data-series-total=\"(\\d+)\"")));
  EXPECT_EQ(std::stoul(m[1]), expected);
  // One canvas per device with allocations.
  const std::regex canvas_re("<canvas data-series-count=\"(\\d+)\"");
  std::size_t canvases = 0, drawn = 0;
  for (auto it = std::sregex_iterator(page.dom.begin(), page.dom.end(), canvas_re); it != std::sregex_iterator(); ++it) {
    ++canvases;
    drawn += std::stoul((*it)[1]);
  }
  EXPECT_EQ(drawn, expected);
  EXPECT_EQ(canvases, data["devices"].size());
  EXPECT_NE(page.dom.find("GD011 launch-bound"), std::string::npos);
  // Five profiler steps: the GPU time is the loop's, start-up apart.
  EXPECT_NE(page.dom.find("device 0: the training loop's"), std::string::npos);
  EXPECT_NE(page.dom.find("of start-up before it"), std::string::npos);

  const fs::path png = out_dir() / "h100-vit.png";
  fs::remove(png);
  capture("timeout 120 " + std::string(kChromium) +
          " --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1400 --screenshot='" +
          png.string() + "' 'file://" + html.string() + "' 2>/dev/null");
  ASSERT_TRUE(fs::exists(png)) << "no screenshot at " << png;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(fs::file_size(png), 10000u);
}

TEST_F(Browser, WarningsAboutAnIncompleteTraceAreShownAboveEverything) {
  Trace t;
  alloc(t, 1000, 0x1000, 4096, 0);
  t.dropped_events = 12;
  t.truncated = true;
  t.corrupt_chunk = true;
  t.truncation_note = "corrupt chunk at byte 4096 (checksum mismatch); the 900 bytes after it were ignored";
  t.stopped_cleanly = false;
  const Page page = load(write_page(t, "incomplete.html"));
  EXPECT_EQ(page.console, "") << "console output while loading";
  const auto warnings = page.dom.find("id=\"gd-warnings\"");
  ASSERT_NE(warnings, std::string::npos) << page.dom;
  for (const char* text : {"12 events were dropped while recording", "The trace file is damaged (corrupt chunk at byte 4096",
                           "The recording did not stop cleanly"})
    EXPECT_NE(page.dom.find(std::string("<div class=\"warn\">") + text, warnings), std::string::npos) << text << "\n" << page.dom;
  EXPECT_EQ(page.dom.find("recording stopped"), std::string::npos) << "a corrupt chunk is not where the recording stopped";
}

TEST_F(Browser, ZoomedViewDrawsOnlyTheChosenTimeRange) {
  Trace t;
  for (std::uint64_t i = 0; i < 20; ++i) alloc(t, 1'000'000 * i, 0x1000 * (i + 1), 1024 * (i + 1), 0);
  const fs::path html = write_page(t, "zoom.html");
  const Page full = load(html);
  EXPECT_NE(full.dom.find("data-view=\"0,19000\""), std::string::npos) << "the whole trace (0..19000 us) by default";
  const Page zoomed = load(html, "#zoom=2000,5000");
  EXPECT_NE(zoomed.dom.find("data-view=\"2000,5000\""), std::string::npos);
  EXPECT_EQ(zoomed.console, "");
}

TEST_F(Browser, KernelNamesFromTheTraceRunNothing) {
  Trace t;
  t.path = "<img src=x onerror=\"document.title='pwned-title'\">";
  alloc(t, 10, 0x1000, 64, 0);
  // Shown as text in the findings (a Float64 kernel) and kept for hover tooltips.
  kernel(t, 20, 40, "<img src=x onerror=alert(1)>");
  kernel(t, 40, 60, "void k<double>(double*) <img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">");
  kernel(t, 60, 80, "</script><script>document.body.setAttribute('data-pwned','2')</script><!--");
  kernel(t, 80, 90, "void z<double>() \u2028</script><svg onload=\"document.body.setAttribute('data-pwned','3')\">");
  const Page page = load(write_page(t, "xss.html"));
  EXPECT_NE(page.dom.find("data-ready=\"1\""), std::string::npos) << "the page script did not finish";
  // The payloads set attributes on <body> or the title if they run; as text they only appear escaped.
  std::smatch body;
  ASSERT_TRUE(std::regex_search(page.dom, body, std::regex("<body[^>]*>")));
  EXPECT_EQ(body.str(), "<body data-ready=\"1\">") << "an event handler from a kernel name ran";
  EXPECT_EQ(page.dom.find("<title>pwned-title"), std::string::npos);
  EXPECT_EQ(page.dom.find("<img"), std::string::npos) << "a kernel name became an element";
  EXPECT_EQ(page.dom.find("<svg"), std::string::npos);
  // The names are there, as text.
  EXPECT_NE(page.dom.find("&lt;img src=x onerror=\"document.body.setAttribute"), std::string::npos);
  EXPECT_EQ(page.console, "");
}

}  // namespace
}  // namespace gpudiag
