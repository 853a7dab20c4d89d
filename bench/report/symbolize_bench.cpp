// How long `gpudiag report` takes on a trace whose stacks run through a very
// large shared library, as a PyTorch run's stacks run through libtorch_cuda
// (about 1 GB, hundreds of thousands of symbols). The bench builds such a
// library (300000 functions and 1 GB of data, assembled and linked by the C
// compiler), or takes one given; a ~25 MB .gdtrace is made whose allocations
// carry stacks into its functions.
// Prints the report's time with stacks, its anchor without them (the same
// trace, stacks dropped), their ratio, and the time against the 5 s goal,
// for `gpudiag report` and for the summary `gpudiag trace` prints.
// Usage: symbolize_bench GPUDIAG_EXE [LIBRARY]
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gpudiag/report/report.h"
#include "gpudiag/trace_io.h"
#include "timed_run.h"

namespace {

using namespace gpudiag;
namespace fs = std::filesystem;

constexpr double kGoalSeconds = 5.0;

// A libtorch_cuda-sized library: many small functions in .text, a gigabyte
// of data after them. "" when the compiler fails.
std::string build_large_library(const fs::path& dir) {
  const fs::path source = dir / "large.S", library = dir / "liblarge.so";
  {
    std::ofstream s(source);
    s << "  .text\n";
    for (int i = 0; i < 300000; ++i) {
      const std::string kernel = fmt::format("kernel_{}", i);
      const std::string name = fmt::format("_ZN5torch4cuda{}{}Ev", kernel.size(), kernel);  // torch::cuda::kernel_N()
      s << "  .p2align 4\n  .globl " << name << "\n  .type " << name << ", @function\n" << name << ":\n  ret\n  .size "
        << name << ", 16\n  .skip 15\n";
    }
    s << "  .section .rodata\n  .zero 1000000000\n  .section .note.GNU-stack,\"\",@progbits\n";
  }
  const std::string command = fmt::format("{} -shared -o {} {}", GPUDIAG_C_COMPILER, library.string(), source.string());
  if (std::system(command.c_str()) != 0) return "";
  fs::remove(source);
  return library.string();
}

// Addresses (in the file) of the library's function symbols, from nm.
std::vector<std::uint64_t> function_addresses(const std::string& library) {
  std::vector<std::uint64_t> out;
  FILE* nm = popen(fmt::format("nm --defined-only {} 2>/dev/null", library).c_str(), "r");
  if (nm == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof line, nm)) {
    unsigned long long addr = 0;
    char type = 0;
    if (std::sscanf(line, "%llx %c", &addr, &type) == 2 && (type == 'T' || type == 't')) out.push_back(addr);
  }
  pclose(nm);
  return out;
}

// ~25 MB of .gdtrace: allocations and frees whose stacks are 40 frames deep
// inside `library`'s functions, 20000 distinct stacks over 100000 distinct
// return addresses.
Trace trace_into(const std::string& library, const std::vector<std::uint64_t>& functions, bool with_stacks) {
  Trace t;
  t.source = TraceSource::Gdtrace;
  const std::uint64_t size = fs::file_size(library);
  const std::uint64_t base = 0x7f0000000000;
  t.modules.push_back({.path = t.intern(library), .base = base, .size = size, .low = base});
  std::mt19937_64 random(42);
  std::vector<std::uint64_t> addresses(100000);
  for (auto& a : addresses) a = base + functions[random() % functions.size()] + 1;
  std::vector<StackId> stacks;
  for (int s = 0; s < 20000; ++s) {
    Stack stack;
    for (int f = 0; f < 40; ++f) stack.frames.push_back({.ip = addresses[random() % addresses.size()]});
    stacks.push_back(t.add_stack(std::move(stack)));
  }
  for (std::uint64_t i = 0; i < 110000; ++i) {
    const StackId stack = with_stacks ? stacks[random() % stacks.size()] : kNoStack;
    t.allocs.push_back({.time_ns = 1000 + i * 100, .addr = 0x10000000 + i * 4096, .bytes = 4096, .kind = MemKind::Device,
                        .device = 0, .stack = stack});
    t.frees.push_back({.time_ns = 1050 + i * 100, .addr = 0x10000000 + i * 4096, .device = 0, .stack = stack});
  }
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `gpudiag report TRACE`, output discarded; wall seconds.
double report_cli(const std::string& exe, const std::string& trace) {
  const bench::Run r = bench::timed_run({exe, "report", "--fail-on", "none", trace}, {});
  if (r.status != 0) std::cerr << "gpudiag report failed: status " << r.status << '\n';
  return r.wall;
}

// What `gpudiag trace` does after the run: summary and HTML page.
double trace_summary(const std::string& trace) {
  const auto t0 = std::chrono::steady_clock::now();
  std::ostringstream out;
  summarize_after_trace(trace, out);
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: symbolize_bench GPUDIAG_EXE [LIBRARY]\n";
    return 2;
  }
  const std::string exe = argv[1];
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpudiag-symbolize-{}", getpid());
  fs::create_directories(dir);
  const std::string library = argc > 2 ? argv[2] : build_large_library(dir);
  if (library.empty()) {
    std::cout << "symbolize_bench: skipped: the C compiler could not build the large library\n";
    return 0;
  }
  const std::vector<std::uint64_t> functions = function_addresses(library);
  if (functions.empty()) {
    std::cout << "symbolize_bench: skipped: nm found no function in " << library << '\n';
    return 0;
  }
  std::cout << fmt::format("library: {} ({:.0f} MiB, {} functions)\n", library,
                           static_cast<double>(fs::file_size(library)) / 1048576.0, functions.size());
  const std::string with = (dir / "stacks.gdtrace").string(), without = (dir / "nostacks.gdtrace").string();
  write_gdtrace(trace_into(library, functions, true), with);
  write_gdtrace(trace_into(library, functions, false), without);
  std::cout << fmt::format(".gdtrace with stacks: {:.1f} MiB\n", static_cast<double>(fs::file_size(with)) / 1048576.0);

  const double report_with = report_cli(exe, with), report_without = report_cli(exe, without);
  std::cout << fmt::format("gpudiag report:        {:.2f} s with stacks, {:.2f} s without (anchor): ratio {:.2f}; "
                           "goal {:.0f} s: ratio {:.2f}\n",
                           report_with, report_without, report_with / report_without, kGoalSeconds,
                           report_with / kGoalSeconds);
  const double summary_with = trace_summary(with), summary_without = trace_summary(without);
  std::cout << fmt::format("gpudiag trace summary: {:.2f} s with stacks, {:.2f} s without (anchor): ratio {:.2f}; "
                           "goal {:.0f} s: ratio {:.2f}\n",
                           summary_with, summary_without, summary_with / summary_without, kGoalSeconds,
                           summary_with / kGoalSeconds);
  if (!std::getenv("KEEP")) fs::remove_all(dir);
  return 0;
}
