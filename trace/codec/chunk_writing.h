// Writing bytes to a trace file: every writer of a .gdtrace (the recorder,
// its crash handlers, the segment ring) writes a chunk with one write(2)
// on a file opened O_APPEND, and goes on after a short write. Async-signal-safe.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace gpudiag::gdtrace {

// False when the file takes no more (errno says why: ENOSPC, EFBIG, ...).
inline bool write_all(int fd, const void* data, std::size_t size) noexcept {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace gpudiag::gdtrace
