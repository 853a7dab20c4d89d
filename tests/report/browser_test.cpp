// The HTML page in real headless Chromium: loads with no console errors,
// leads with the findings, draws the expected number of series on a
// labelled time axis and, zoomed in, the allocations of the time shown, is
// screenshotted, and runs nothing from names in the trace.

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "gpudiag/report/report.h"
#include "gpudiag/import/load_trace.h"
#include "python_with.h"
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

// In a 1400x1000 window: what the first screen shows is asserted at that size.
Page load(const fs::path& html, const std::string& fragment = "") {
  const fs::path log = html.string() + ".log";
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --window-size=1400,1000 ";
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

// The page with a script of the test's appended: it measures the laid-out
// page and writes what it found as JSON into <pre id="probe">.
constexpr const char* kProbe = R"JS(<script>
(function () {
  const r = { width: innerWidth };
  const f = document.getElementById("gd-findings"), m = document.getElementById("gd-memory");
  r.findings_before_memory = !!(f.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING);
  r.findings_top = f.getBoundingClientRect().top;
  r.findings_heading_bottom = f.querySelector("h2").getBoundingClientRect().bottom;
  const first = f.querySelector(".finding");
  r.first_finding_bottom = first ? first.getBoundingClientRect().bottom : -1;
  r.first_entry = f.querySelector(".crash, .rule > summary").textContent;
  r.rules = Array.from(f.querySelectorAll(".rule > summary")).map(e => ({ text: e.textContent, top: e.getBoundingClientRect().top }));
  r.memory_charts = document.querySelectorAll("#gd-timelines canvas").length;
  r.headings = Array.from(document.querySelectorAll("h1, h2, h3, summary")).map(e => e.textContent);
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(r); document.body.append(out);
})();
</script>)JS";

nlohmann::json probe(const fs::path& html, Page* page = nullptr, const std::string& script = kProbe,
                     const std::string& fragment = "") {
  std::ifstream in(html, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto body_end = text.rfind("</body>");
  EXPECT_NE(body_end, std::string::npos);
  text.insert(body_end, script);
  const fs::path probed = html.string() + ".probe.html";
  std::ofstream(probed, std::ios::binary) << text;
  Page p = load(probed, fragment);
  std::smatch m;
  if (!std::regex_search(p.dom, m, std::regex("<pre id=\"probe\">([^<]*)</pre>"))) {
    ADD_FAILURE() << "the probe did not run\n" << p.console;
    return {};
  }
  std::string json = m[1];
  for (const auto& [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
    for (auto at = json.find(from); at != std::string::npos; at = json.find(from, at + 1))
      json.replace(at, std::strlen(from), to);
  if (page) *page = std::move(p);
  return nlohmann::json::parse(json);
}

// The time axis's tick labels ("0.5 s", "250 ms", ...) of the first memory
// chart, in microseconds since the start of the trace.
std::vector<double> ticks_us(const std::string& dom) {
  std::vector<double> out;
  const auto chart = dom.find("id=\"gd-timelines\"");
  const auto end = dom.find("class=\"axis-caption\"", chart);
  if (chart == std::string::npos || end == std::string::npos) return out;
  const std::string axis = dom.substr(chart, end - chart);
  const std::regex label_re("class=\"tick-label\"[^>]*>([-0-9.]+) (s|ms|us|ns)<");
  for (auto it = std::sregex_iterator(axis.begin(), axis.end(), label_re); it != std::sregex_iterator(); ++it) {
    const std::string unit = (*it)[2];
    const double scale = unit == "s" ? 1e6 : unit == "ms" ? 1e3 : unit == "us" ? 1 : 1e-3;
    out.push_back(std::stod((*it)[1]) * scale);
  }
  return out;
}

std::pair<double, double> view_us(const std::string& dom) {
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("data-view=\"([-0-9.e+]+),([-0-9.e+]+)\""))) return {0, 0};
  return {std::stod(m[1]), std::stod(m[2])};
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
  // One profiler step, which holds all of the GPU's work: the GPU time is the
  // whole run's, none of it set apart as start-up.
  EXPECT_NE(page.dom.find(load_trace(trace).device_label(0) + ": 7.56 ms from first to last GPU activity"), std::string::npos);
  EXPECT_EQ(page.dom.find("of start-up before it"), std::string::npos);

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

// Four devices' memory charts, GPU time on the host too, a premature free
// (an error) and a Float64 kernel (a warning); the trace starts half a
// second before the first allocation.
Trace busy_trace() {
  Trace t;
  t.path = "busy.gdtrace";
  kernel(t, 0, 1'000'000, "void gemm<double>(double*)");
  kernel(t, 10'000'000, 20'000'000, "gdrt::binary", kHostDevice);
  for (std::int32_t device = 0; device < 4; ++device)
    for (std::uint64_t i = 0; i < 8; ++i) {
      const std::uint64_t addr = 0x10000000ull * (device * 16 + i + 1);  // 256 MiB apart: none overlap
      alloc(t, 500'000'000 + 200'000'000 * i, addr, (1u << 20) * (i + 1), device, stack_named(t, "make_activations"));
      free_at(t, 1'000'000'000 + 200'000'000 * i, addr, device);
    }
  alloc(t, 600'000'000, 0xA000, 4096, 0, stack_named(t, "alloc_scratch"));
  free_at(t, 700'000'000, 0xA000, 0, 0, stack_named(t, "release_scratch"));
  t.memsets.push_back({.start_ns = 710'000'000, .end_ns = 720'000'000, .addr = 0xA100, .bytes = 16, .device = 0});
  return t;
}

TEST_F(Browser, FindingsLeadThePageAboveTheMemoryCharts) {
  Page page;
  const nlohmann::json r = probe(write_page(busy_trace(), "busy.html"), &page);
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(page.console, "") << "console output while loading";
  // Layout follows the width; headless Chromium's viewport may be a little
  // shorter than its window, so "on the first screen" is checked against 1000.
  ASSERT_EQ(r["width"], 1400) << "the viewport is not the one asked for";
  EXPECT_EQ(r["memory_charts"], 4);
  EXPECT_TRUE(r["findings_before_memory"]) << "the findings come after the memory charts";
  EXPECT_GE(r["findings_top"].get<double>(), 0);
  EXPECT_LT(r["findings_heading_bottom"].get<double>(), 1000) << "the findings heading is below the first screen";
  EXPECT_GT(r["first_finding_bottom"].get<double>(), 0);
  EXPECT_LT(r["first_finding_bottom"].get<double>(), 1000) << "the first finding is below the first screen";
  const std::string first = r["first_entry"];
  EXPECT_EQ(first.rfind("errorGD004 premature-free", 0), 0u) << "the error is not the first finding: " << first;
}

TEST_F(Browser, ManyFindingsOfOneRuleLeaveTheNextRuleOnTheFirstScreen) {
  Trace t = busy_trace();
  for (std::uint64_t i = 0; i < 30; ++i)  // thirty uses after free of the scratch buffer
    t.memsets.push_back({.start_ns = 730'000'000 + 1'000'000 * i, .end_ns = 730'500'000 + 1'000'000 * i,
                         .addr = 0xA000 + 64 * i, .bytes = 16, .device = 0,
                         .stack = stack_named(t, "touch", "train.cpp", static_cast<std::uint32_t>(100 + i))});
  // A deep stack shows its innermost frames; the rest wait behind a click.
  Stack deep;
  for (std::uint32_t i = 0; i < 10; ++i)
    deep.frames.push_back(
        {.ip = 0x2000 + i, .function = t.intern("frame" + std::to_string(i)), .file = t.intern("deep.cpp"), .line = i});
  t.memsets.back().stack = t.add_stack(std::move(deep));
  Page page;
  const nlohmann::json r = probe(write_page(t, "many.html"), &page);
  ASSERT_FALSE(r.is_null());
  EXPECT_NE(page.dom.find("frame3 deep.cpp:3<details class=\"frames\"><summary>6 more frames</summary>frame4 deep.cpp:4"),
            std::string::npos);
  ASSERT_GE(r["rules"].size(), 2u);
  const std::string first = r["rules"][0]["text"];
  EXPECT_EQ(first.rfind("errorGD004 premature-free \u00d731", 0), 0u) << first;
  EXPECT_LT(r["rules"][1]["top"].get<double>(), 1000) << "the GD004 findings push the next rule off the first screen";
}

TEST_F(Browser, ACrashIsTheFirstFinding) {
  Trace t = busy_trace();
  t.crashes.push_back({.time_ns = 1'500'000'000, .signal = SIGSEGV, .code = 1, .address = 0x10, .tid = 12,
                       .stack = stack_named(t, "read_loss")});
  Page page;
  const nlohmann::json r = probe(write_page(t, "crash.html"), &page);
  ASSERT_FALSE(r.is_null());
  const std::string first = r["first_entry"];
  EXPECT_EQ(first.rfind("crashThe program crashed: SIGSEGV", 0), 0u) << first;
  EXPECT_LT(r["first_finding_bottom"].get<double>(), 1000);
  EXPECT_EQ(page.dom.find("<div class=\"warn\">The program crashed"), std::string::npos) << "the crash is shown twice";
}

TEST_F(Browser, MemoryChartsHaveATimeAxisSinceTheStartOfTheTrace) {
  const Page page = load(write_page(busy_trace(), "axis.html"));
  const std::vector<double> ticks = ticks_us(page.dom);
  ASSERT_GE(ticks.size(), 3u) << "no tick labels on the time axis";
  EXPECT_NE(page.dom.find("time since the start of the trace"), std::string::npos);
  // The first allocation is 0.5 s after the trace starts: the chart begins there, and so do its ticks.
  const auto [from, to] = view_us(page.dom);
  EXPECT_EQ(from, 500'000);
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_GE(ticks[i], from) << "tick " << i;
    EXPECT_LE(ticks[i], to) << "tick " << i;
    if (i) {
      EXPECT_GT(ticks[i], ticks[i - 1]);
    }
  }
  EXPECT_NE(page.dom.find(">1 s<"), std::string::npos) << "ticks in seconds for a span of seconds";
}

TEST_F(Browser, GpuTimeHeadingsNameDevicesAsTheSummaryDoes) {
  const Trace t = busy_trace();
  Page page;
  const nlohmann::json r = probe(write_page(t, "labels.html"), &page);
  ASSERT_FALSE(r.is_null());
  bool host = false;
  for (const auto& h : r["headings"]) {
    const std::string text = h;
    EXPECT_EQ(text.find("device -1"), std::string::npos) << text;
    host |= text.rfind("host: ", 0) == 0;
  }
  EXPECT_TRUE(host) << "no heading for the host's GPU time";
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
                           "The recording has no end"})
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
  // The time axis follows the zoom.
  const std::vector<double> ticks = ticks_us(zoomed.dom);
  ASSERT_GE(ticks.size(), 3u);
  for (double t : ticks) {
    EXPECT_GE(t, 2000);
    EXPECT_LE(t, 5000);
  }
}

// The first memory chart's level of detail and how many allocations it draws one by one.
std::pair<int, int> level_and_drawn(const std::string& dom) {
  std::smatch level, drawn;
  if (!std::regex_search(dom, level, std::regex("data-level=\"(\\d+)\"")) ||
      !std::regex_search(dom, drawn, std::regex("data-drawn=\"(\\d+)\"")))
    return {-1, -1};
  return {std::stoi(level[1]), std::stoi(drawn[1])};
}

// Hovers down the first memory chart at a given share of its width and
// writes the distinct tooltips into <pre id="probe">.
constexpr const char* kHoverProbe = R"JS(<script>
(function () {
  const canvas = document.querySelector("#gd-timelines canvas"), tip = document.querySelector("#gd-timelines .tip");
  const r = canvas.getBoundingClientRect(), x = r.left + r.width * Number(location.hash.split("&at=")[1]), tips = [];
  for (let y = r.top + 1; y < r.bottom; y += 2) {
    canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: x, clientY: y, bubbles: true }));
    if (tip.style.display === "block" && !tips.includes(tip.textContent)) tips.push(tip.textContent);
  }
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify({ tips }); document.body.append(out);
})();
</script>)JS";

// Zoomed into one training step, the page draws that step's activations one
// by one, though over the whole run the largest allocations are the weights
// and the last steps' activations; hovering one shows its size, address and
// stack.
TEST_F(Browser, ZoomedIntoOneStepThePageDrawsThatStepsAllocations) {
  const int step = 10, per_step = 40;
  const fs::path html = write_page(weights_and_activations(64, per_step), "steps.html");
  const Page whole = load(html);
  EXPECT_EQ(whole.console, "");
  EXPECT_EQ(level_and_drawn(whole.dom), std::make_pair(0, 200)) << "the whole run draws its 200 largest";
  // The step's 40 activations, 10 us apart, each live 9 us.
  const double from = static_cast<double>(step_start_ns(step)) / 1e3;
  const std::string zoom = "#zoom=" + std::to_string(static_cast<long>(from)) + "," + std::to_string(static_cast<long>(from + 400));
  const Page zoomed = load(html, zoom);
  EXPECT_EQ(zoomed.console, "") << "console output while loading";
  const auto [level, drawn] = level_and_drawn(zoomed.dom);
  EXPECT_GE(level, 1) << "zoomed into a step, the page still draws the whole run's allocations";
  EXPECT_EQ(drawn, 3 + per_step) << "the weights and the step's activations, one by one";
  // 4.5 us into the view the step's first activation (11 MiB) is live, on top of the weights.
  Page hovered;
  const nlohmann::json r = probe(html, &hovered, kHoverProbe, zoom + "&at=" + std::to_string(4.5 / 400));
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(hovered.console, "");
  char addr[24];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(activation_addr(step, 0, per_step)));
  bool activation = false, weight = false;
  for (const std::string tip : r["tips"]) {
    activation |= tip.find("11.0 MiB device at " + std::string(addr)) != std::string::npos &&
                  tip.find("forward model.py:100") != std::string::npos;
    weight |= tip.find("64.0 MiB") != std::string::npos && tip.find("init_weights model.py:10") != std::string::npos;
  }
  EXPECT_TRUE(activation) << "no tooltip names the step's first activation: " << r.dump(1);
  EXPECT_TRUE(weight) << r.dump(1);
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

// The page of a PyTorch memory snapshot: its leak and out-of-memory first,
// then the memory timeline, with the Python lines that allocated.
TEST_F(Browser, ATorchSnapshotsPageShowsItsFindingsAndTimelineWithPythonLines) {
  const auto python = test::python_with("pickle");
  if (!python) GTEST_SKIP() << "no python3 to write the snapshot";
  const fs::path snapshot = out_dir() / "snapshot.pickle";
  const auto made = test::run_command(*python + " " + GPUDIAG_SOURCE_DIR + "/tests/import/make_torch_snapshot.py " +
                                      snapshot.string() + " --steps 3000 --leak-from 1000 --oom --stream");
  ASSERT_EQ(made.status, 0) << made.out;
  const fs::path html = write_page(load_trace(snapshot.string()), "snapshot.html");
  Page page;
  const nlohmann::json r = probe(html, &page);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(page.console, "") << "console output while loading";
  EXPECT_TRUE(r["findings_before_memory"].get<bool>());
  EXPECT_GE(r["memory_charts"].get<int>(), 1);
  std::string rules;
  for (const auto& rule : r["rules"]) rules += rule["text"].get<std::string>() + "\n";
  EXPECT_NE(rules.find("GD008"), std::string::npos) << rules;
  EXPECT_NE(rules.find("GD007"), std::string::npos) << rules;
  EXPECT_NE(page.dom.find("train.py:57"), std::string::npos) << "the leaking Python line";
}

}  // namespace
}  // namespace gpudiag
