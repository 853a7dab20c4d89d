// Report-time symbolization of recorded return addresses with libdw (elfutils):
// each recorded module is reported at its load address, then every frame gets
// function, file and line when the module (and its debug info) is present.
#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <memory>

#include "gpudiag/trace.h"

namespace gpudiag {
namespace {

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace

std::size_t symbolize(Trace& trace) {
  if (trace.modules.empty()) return 0;
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = &debuginfo_path,
  };
  std::unique_ptr<Dwfl, void (*)(Dwfl*)> dwfl(dwfl_begin(&callbacks), dwfl_end);
  if (!dwfl) return 0;
  dwfl_report_begin(dwfl.get());
  std::vector<Dwfl_Module*> reported(trace.modules.size(), nullptr);
  for (std::size_t i = 0; i < trace.modules.size(); ++i) {
    const std::string path(trace.str(trace.modules[i].path));
    if (path.empty() || path.find("linux-vdso") != std::string::npos) continue;
    reported[i] = dwfl_report_elf(dwfl.get(), path.c_str(), path.c_str(), -1, trace.modules[i].base, false);
  }
  dwfl_report_end(dwfl.get(), nullptr, nullptr);

  std::size_t resolved = 0;
  for (auto& stack : trace.stacks) {
    for (std::size_t f = 0; f < stack.frames.size(); ++f) {
      StackFrame& frame = stack.frames[f];
      if (frame.function != 0 || frame.module < 0 || reported[static_cast<std::size_t>(frame.module)] == nullptr) continue;
      Dwfl_Module* mod = reported[static_cast<std::size_t>(frame.module)];
      // Return addresses point after the call; look up the call itself.
      const Dwarf_Addr pc = frame.ip - (frame.ip > 0 ? 1 : 0);
      if (const char* name = dwfl_module_addrname(mod, pc)) {
        frame.function = trace.intern(demangle(name));
        ++resolved;
      }
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
          frame.file = trace.intern(file);
          frame.line = static_cast<std::uint32_t>(lineno);
        }
      }
    }
  }
  return resolved;
}

}  // namespace gpudiag
