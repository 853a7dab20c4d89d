// Report-time symbolization of recorded return addresses with libdw
// (elfutils). Built to stay fast on framework traces, whose stacks run
// through libraries of a gigabyte (libtorch_cuda):
//   - each distinct address is resolved once, and only modules that some
//     frame falls in are opened;
//   - function names come from the module's ELF symbol table, sorted once
//     per module and binary-searched (libdw's own lookup scans every symbol
//     for every address);
//   - file:line comes from DWARF only for modules small enough to read in a
//     report; frames in larger ones keep their function name and the trace
//     lists those modules in Trace::modules_without_lines;
//   - debug information is looked up on this machine only, never through
//     debuginfod, whose network requests would stall the report.
#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include "gpudiag/trace.h"

namespace gpudiag {

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

namespace {

struct Symbol {
  GElf_Addr addr;
  GElf_Xword size;
  const char* name;  // owned by libdw, lives as long as the Dwfl
};

struct ModuleSymbols {
  Dwfl_Module* module = nullptr;
  bool lines = false;
  bool loaded = false;
  std::vector<Symbol> symbols;  // functions, by address

  void load() {
    loaded = true;
    const int n = dwfl_module_getsymtab(module);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr addr = 0;
      const char* name = dwfl_module_getsym_info(module, i, &sym, &addr, nullptr, nullptr, nullptr);
      if (name && *name && addr != 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC) symbols.push_back({addr, sym.st_size, name});
    }
    std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
  }

  const char* function_at(GElf_Addr pc) {
    if (!loaded) load();
    auto it = std::upper_bound(symbols.begin(), symbols.end(), pc, [](GElf_Addr v, const Symbol& s) { return v < s.addr; });
    // The nearest symbols below pc: a sized one must cover it (one that ends
    // before pc may sit inside a larger one that does); an unsized one
    // (hand-written assembly) stands for the code up to the next symbol.
    for (int looked = 0; it != symbols.begin() && looked < 16; ++looked) {
      --it;
      if (it->size == 0) return looked == 0 ? it->name : nullptr;
      if (pc < it->addr + it->size) return it->name;
    }
    return nullptr;
  }
};

struct Resolved {
  StringId function = 0, file = 0;
  std::uint32_t line = 0;
};

}  // namespace

std::size_t symbolize(Trace& trace, const SymbolizeOptions& options) {
  if (trace.modules.empty()) return 0;
  // Which modules any frame needs.
  std::vector<bool> needed(trace.modules.size(), false);
  for (const Stack& stack : trace.stacks)
    for (const StackFrame& f : stack.frames)
      if (f.function == 0 && f.module >= 0 && static_cast<std::size_t>(f.module) < needed.size())
        needed[static_cast<std::size_t>(f.module)] = true;

  unsetenv("DEBUGINFOD_URLS");  // local debug information only: no network lookups in a report
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
  std::vector<ModuleSymbols> modules(trace.modules.size());
  trace.modules_without_lines.clear();
  for (std::size_t i = 0; i < trace.modules.size(); ++i) {
    if (!needed[i]) continue;
    const std::string path(trace.str(trace.modules[i].path));
    if (path.empty() || path.find("linux-vdso") != std::string::npos) continue;
    std::error_code ec;
    const std::uint64_t bytes = std::filesystem::file_size(path, ec);
    if (ec) continue;  // gone from this machine: frames keep their address and module
    modules[i].module = dwfl_report_elf(dwfl.get(), path.c_str(), path.c_str(), -1, trace.modules[i].base, false);
    modules[i].lines = bytes <= options.max_module_bytes_for_lines;
    if (modules[i].module && !modules[i].lines) trace.modules_without_lines.push_back(trace.modules[i].path);
  }
  dwfl_report_end(dwfl.get(), nullptr, nullptr);

  std::unordered_map<std::uint64_t, Resolved> resolved_ips;
  std::unordered_map<const char*, StringId> names;  // symbol name -> demangled, interned
  std::size_t resolved = 0;
  for (auto& stack : trace.stacks) {
    for (std::size_t i = 0; i < stack.frames.size(); ++i) {
      StackFrame& frame = stack.frames[i];
      if (frame.function != 0 || frame.module < 0 || static_cast<std::size_t>(frame.module) >= modules.size()) continue;
      ModuleSymbols& m = modules[static_cast<std::size_t>(frame.module)];
      if (m.module == nullptr) continue;
      // Return addresses point after the call; look up the call itself.
      const Dwarf_Addr pc = frame.ip - (frame.ip > 0 && !(i == 0 && stack.starts_at_fault) ? 1 : 0);
      auto [it, fresh] = resolved_ips.try_emplace(pc);
      Resolved& r = it->second;
      if (fresh) {
        if (const char* name = m.function_at(pc)) {
          auto [n, added] = names.try_emplace(name, 0);
          if (added) n->second = trace.intern(demangle(name));
          r.function = n->second;
        }
        if (m.lines) {
          if (Dwfl_Line* line = dwfl_module_getsrc(m.module, pc)) {
            int lineno = 0;
            if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
              r.file = trace.intern(file);
              r.line = static_cast<std::uint32_t>(lineno);
            }
          }
        }
      }
      frame.function = r.function;
      frame.file = r.file;
      frame.line = r.line;
      resolved += r.function != 0;
    }
  }
  return resolved;
}

}  // namespace gpudiag
