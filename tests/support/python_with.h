// The Python a test can use for a module: python3 on PATH first, then
// Debian's /usr/bin/python3 (a PATH may put another Python first, such as a
// pyenv one without Debian's packages).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace gpudiag::test {

// The first interpreter that can import `module`.
inline std::optional<std::string> python_with(const std::string& module) {
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const int status = std::system((std::string(candidate) + " -c 'import " + module + "' >/dev/null 2>&1").c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::string(candidate);
  }
  return std::nullopt;
}

}  // namespace gpudiag::test
