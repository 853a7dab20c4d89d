// A trace a reader accepts can still hold any value in any field: times out
// of order or at the ends of the clock, sizes of zero or 2^64-1, devices and
// streams nobody declared, ids that point at the wrong string or stack.
// gpudiag report must analyse and render every such trace without crashing.
// These tests garble the events of real traces field by field, through the
// same fields() that the .gdtrace reader decodes with, so every field a file
// can carry is reached and only values a reader can give are made, then run
// the whole report on each: findings, summary, JSON, SARIF, the HTML page and
// the Perfetto export.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>

#include "event_codec.h"
#include "gpudiag/export/chrome_trace.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"

namespace gpudiag {
namespace {

// The IO of event_codec.h's fields() that rewrites a field now and then.
class Garble {
 public:
  Garble(std::mt19937_64& rng, const Trace& trace, double rate)
      : rng_(rng), strings_(trace.strings.size()), stacks_(trace.stacks.size()), rate_(rate) {}

  template <class E>
  void enum8(gdtrace::Slot, E& v) {
    if (hit()) v = static_cast<E>(rng_() % (max_value(E{}) + 1u));
  }
  void device(std::int32_t& d) {
    if (hit()) d = number(d);
  }
  void device_fixed(std::int32_t) {}
  void t0(std::uint64_t& t) { time(t); }
  void t1(std::uint64_t& t) { time(t); }
  void stream(std::uint64_t& s) {
    if (hit()) s = number(s);
  }
  void correlation(std::uint64_t& c) {
    if (hit()) c = number(c);
  }
  void stack(StackId& s) {
    if (hit()) s = static_cast<StackId>(rng_() % stacks_);
  }
  template <class T>
  void x(T& v) {
    if (hit()) v = number(v);
  }
  void x_string(StringId& s) {
    if (hit()) s = static_cast<StringId>(rng_() % strings_);
  }
  void flag(std::uint16_t, bool& on) {
    if (hit()) on = !on;
  }
  void tid(std::uint32_t& t) {
    if (hit()) t = number(t);
  }
  template <class T>
  void p(int, T& v) {
    if (hit()) v = number(v);
  }
  void p_string(int, StringId& s) { x_string(s); }
  void p32(int, std::uint32_t& v) {
    if (hit()) v = number(v);
  }

 private:
  bool hit() { return std::uniform_real_distribution<double>(0, 1)(rng_) < rate_; }

  // A value near the old one, at an end of the type's range, or anything.
  template <class T>
  T number(T v) {
    using L = std::numeric_limits<T>;
    switch (rng_() % 8) {
      case 0: return T{0};
      case 1: return static_cast<T>(v + 1);
      case 2: return static_cast<T>(v - 1);
      case 3: return L::max();
      case 4: return L::min();
      case 5: return static_cast<T>(v ^ (T{1} << (rng_() % (sizeof(T) * 8 - 1))));
      case 6: return static_cast<T>(rng_() % 8);  // a small id another event may also have
      default: return static_cast<T>(rng_());
    }
  }

  // Mostly a shift within the run (events reordered, ends before starts),
  // sometimes an end of the clock.
  void time(std::uint64_t& t) {
    if (!hit()) return;
    const std::uint64_t shift = rng_() % 1'000'000'000;
    switch (rng_() % 5) {
      case 0: t += shift; break;
      case 1: t = t > shift ? t - shift : 0; break;
      case 2: t = 0; break;
      case 3: t = std::numeric_limits<std::uint64_t>::max() - rng_() % 2; break;
      default: t = rng_();
    }
  }

  std::mt19937_64& rng_;
  std::size_t strings_, stacks_;
  double rate_;
};

template <class Event>
void garble_all(std::vector<Event>& events, Garble& io, std::mt19937_64& rng) {
  if (!events.empty() && rng() % 8 == 0) events.erase(events.begin() + static_cast<long>(rng() % events.size()));
  if (!events.empty() && rng() % 8 == 0) events.push_back(events[rng() % events.size()]);
  for (Event& e : events) gdtrace::fields(io, e);
}

Trace garbled(const Trace& seed, std::mt19937_64& rng) {
  Trace t = seed;
  Garble io(rng, t, 0.02 + 0.2 * std::uniform_real_distribution<double>(0, 1)(rng));
  t.for_each_event_column([&](auto& column) { garble_all(column, io, rng); });
  garble_all(t.devices, io, rng);
  garble_all(t.streams, io, rng);
  if (rng() % 4 == 0) t.truncated = !t.truncated;
  if (rng() % 4 == 0) t.stopped_cleanly = !t.stopped_cleanly;
  if (rng() % 4 == 0) t.dropped_events = rng() % 3 == 0 ? std::numeric_limits<std::uint64_t>::max() : rng() % 1000;
  t.sort_by_time();  // as every reader leaves a trace
  return t;
}

// Everything gpudiag report makes of a trace.
void report_everything(const Trace& t) {
  const Report r = analyze(t);
  std::ostringstream out;
  print_summary(out, t, r, {});
  out << report_json(t, r).dump();
  out << report_sarif(t, r, {}).dump();
  write_html(out, t, r);
  write_chrome_trace(t, out);
  EXPECT_FALSE(out.str().empty());
}

// "h200/..." is in this repository (tests/data/h200); the rest is shared data.
std::string trace_path(const std::string& name) {
  if (name.starts_with("h200/")) return std::string(GPUDIAG_SOURCE_DIR) + "/tests/data/" + name;
  return std::string(GPUDIAG_SHARED_DATA_DIR) + "/" + name;
}

class GarbledTraces : public ::testing::TestWithParam<std::string> {};

TEST_P(GarbledTraces, AreReportedWithoutCrashing) {
  const std::string path = trace_path(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not here (the shared real traces sit beside the checkout)";
  const Trace seed = load_trace(path);
  report_everything(seed);
  std::mt19937_64 rng(std::hash<std::string>{}(GetParam()));
  // GPUDIAG_GARBLE_ROUNDS sets more for a long run (under the sanitizers).
  const char* rounds_env = std::getenv("GPUDIAG_GARBLE_ROUNDS");
  const long rounds = rounds_env ? std::strtol(rounds_env, nullptr, 10) : 150;
  for (long i = 0; i < rounds; ++i) {
    const std::uint64_t state = rng();
    std::mt19937_64 one(state);
    const Trace t = garbled(seed, one);
    SCOPED_TRACE("garbled with seed " + std::to_string(state));
    report_everything(t);
    if (HasFatalFailure()) return;
  }
}

// gpudiag's own traces of real GPU programs (allocations, frees, copies,
// kernel arguments, host accesses, a crash, an out-of-memory), and two
// Kineto traces (memory counters, many streams). The H200 recordings add
// what the H100 ones lack: kernel arguments read from launches, guarded
// copy destinations, crash records, and gdrt's training steps on cuda.
INSTANTIATE_TEST_SUITE_P(RealTraces, GarbledTraces,
                         ::testing::Values("h200/h200-cuda-freeasync_race.gdtrace.gz",
                                           "h200/h200-cuda-unsynced_read.gdtrace.gz",
                                           "h200/h200-cuda-host_ptr_kernel.gdtrace.gz",
                                           "h200/h200-cuda-host_deref_device.gdtrace.gz",
                                           "h200/h200-cuda-many_tiny.gdtrace.gz",
                                           "h200/h200-gdrt-train_unet.gdtrace.gz",
                                           "gpu/h100-cuda-freeasync_race.gdtrace.gz",
                                           "gpu/h100-cuda-unsynced_read.gdtrace.gz",
                                           "gpu/h100-cuda-host_ptr_kernel.gdtrace.gz",
                                           "gpu/h100-cuda-host_deref_device.gdtrace.gz",
                                           "gpu/h100-cuda-oom.gdtrace.gz", "gpu/h100-cuda-leak.gdtrace.gz",
                                           "traces/a100-event-sync-multistream.trace.json.gz",
                                           "traces/a100-alexnet.trace.json.gz"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace gpudiag
