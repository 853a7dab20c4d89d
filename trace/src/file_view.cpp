#include "file_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpudiag/trace_io.h"

namespace gpudiag {

FileView::FileView(Piecewise, const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw TraceError(path + ": is not a regular file: a trace read in passes is read twice");
  }
  size_ = static_cast<std::size_t>(st.st_size);
}

FileView::~FileView() {
  if (fd_ >= 0) ::close(fd_);
}

const char* FileView::at(std::size_t pos, std::size_t n) {
  if (fd_ < 0) return whole_.data() + pos;
  piece_.resize(n);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, piece_.data() + done, n - done, static_cast<off_t>(pos + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw TraceError(path_ + ": cannot read: " + std::strerror(errno));
    if (r == 0) throw TraceError(path_ + ": the file became shorter while it was read");
    done += static_cast<std::size_t>(r);
  }
  return piece_.data();
}

}  // namespace gpudiag
