// read_file(): a whole input file in one buffer, for every trace reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpudiag/trace_io.h"

namespace gpudiag {

// read(2) into a buffer sized from fstat, not a mapping: a trace overwritten
// while it is read (a new `gpudiag trace -o` of the same file) would turn a
// mapping's vanished pages into SIGBUS.
std::string read_file(const std::string& path, std::size_t spare) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  const bool known = ::fstat(fd, &st) == 0;
  if (known && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw TraceError(path + ": is a directory, not a trace file");
  }
  std::string bytes;
  std::size_t used = 0;
  if (known && S_ISREG(st.st_mode)) {
    bytes.reserve(static_cast<std::size_t>(st.st_size) + spare);
    bytes.resize(static_cast<std::size_t>(st.st_size));
  }
  for (;;) {
    if (used == bytes.size()) bytes.resize(bytes.size() * 2 + (1 << 16));  // a pipe, or a file still growing
    const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw TraceError(path + ": cannot read: " + std::strerror(error));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(used);
  if (bytes.capacity() - bytes.size() < spare) bytes.reserve(bytes.size() + spare);
  return bytes;
}

}  // namespace gpudiag
