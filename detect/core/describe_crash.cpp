// How every report words the fatal signal a traced program died of.
#include <signal.h>
#include <string.h>

#include <fmt/format.h>

#include "gpudiag/detect/detect.h"

namespace gpudiag {
namespace {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

std::string_view code_text(int sig, int code) {
  if (sig == SIGSEGV && code == SEGV_MAPERR) return "address not mapped";
  if (sig == SIGSEGV && code == SEGV_ACCERR) return "no access to the address";
  if (sig == SIGBUS && code == BUS_ADRERR) return "nonexistent physical address";
  if (sig == SIGBUS && code == BUS_ADRALN) return "misaligned address";
  if (sig == SIGFPE && code == FPE_INTDIV) return "integer division by zero";
  return {};
}

}  // namespace

bool is_memory_fault(const Crash& crash) { return crash.signal == SIGSEGV || crash.signal == SIGBUS; }

std::string describe_crash(const Trace& trace, const Crash& crash) {
  std::string text = fmt::format("the program crashed: {}", signal_name(crash.signal));
  const bool has_address = crash.signal == SIGSEGV || crash.signal == SIGBUS || crash.signal == SIGFPE || crash.signal == SIGILL;
  if (const std::string_view why = code_text(crash.signal, crash.code); !why.empty())
    text += fmt::format(" ({}{})", why, has_address ? fmt::format(" at 0x{:x}", crash.address) : "");
  else if (has_address)
    text += fmt::format(" at 0x{:x}", crash.address);
  text += fmt::format(" on thread {}", crash.tid);
  const auto frames = frames_of(trace, crash.stack);
  if (!frames.empty()) {
    const Frame& f = frames.front();
    text += fmt::format(", in {}", f.function.empty() ? fmt::format("0x{:x}", f.address) : f.function);
    if (!f.file.empty()) text += fmt::format(" at {}:{}", f.file, f.line);
  }
  return text;
}

}  // namespace gpudiag
