// Descriptors that gpudiag opens beside a program's own. open(2) returns the
// lowest free number: in a process started with stdout closed, a trace file
// would become descriptor 1 and take in everything the program prints. So
// these descriptors are close-on-exec and never 0, 1 or 2, and a standard
// descriptor the program was started without stays closed for it (its writes
// fail with EBADF, and its own next open() gets that number, as untraced).
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

namespace gpudiag {

// `fd` when it is above 2 (or -1); otherwise a close-on-exec copy of it at 3
// or above, with `fd` closed again. -1 with errno set when no copy can be made.
inline int move_above_stdio(int fd) noexcept {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  const int error = errno;
  ::close(fd);
  errno = error;
  return moved;
}

// open(2), close-on-exec, on a descriptor above 2.
inline int open_above_stdio(const char* path, int flags, mode_t mode = 0) noexcept {
  return move_above_stdio(::open(path, flags | O_CLOEXEC, mode));
}

// For gpudiag's own process, before it opens anything: each of 0, 1 and 2
// that is closed is held open on /dev/null, close-on-exec. No file of
// gpudiag's takes the number (what it prints there goes nowhere instead of
// into that file), and a command it runs still starts with it closed.
inline void hold_closed_stdio() noexcept {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // The lowest free number: fd itself, unless a lower one could not be held.
    const int held = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (held >= 0 && held != fd) ::close(held);
  }
}

}  // namespace gpudiag
