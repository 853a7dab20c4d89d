#include "pickle_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gpudiag/trace_io.h"

namespace gpudiag::import::pickle {

Input::Input(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
    size_ = static_cast<std::size_t>(st.st_size);
    return;
  }
  ::close(fd_);
  fd_ = -1;
  owned_ = read_file(path);
  whole_ = owned_;
  size_ = owned_.size();
}

Input::~Input() {
  if (fd_ >= 0) ::close(fd_);
}

const char* Input::need(std::size_t n) {
  if (left() < n) return nullptr;
  if (fd_ < 0) {
    const char* p = whole_.data() + pos_;
    pos_ += n;
    return p;
  }
  if (!fill(n)) return nullptr;
  const char* p = buffer_.data() + begin_;
  begin_ += n;
  return p;
}

std::optional<std::string_view> Input::line(std::size_t longest) {
  for (std::size_t n = 1; n <= longest && n <= left(); ++n) {
    const char* p = peek(n);
    if (p == nullptr) return std::nullopt;
    if (p[n - 1] == '\n') return std::string_view(need(n), n - 1);
  }
  return std::nullopt;
}

const char* Input::peek(std::size_t n) {
  if (fd_ < 0) return whole_.data() + pos_;
  return fill(n) ? buffer_.data() + begin_ : nullptr;
}

bool Input::fill(std::size_t n) {
  if (end_ - begin_ >= n) return true;
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(begin_));
  base_ += begin_;
  end_ -= begin_;
  begin_ = 0;
  buffer_.resize(std::max<std::size_t>({n, kChunk, buffer_.size()}));
  while (end_ < n) {
    const ssize_t r = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    end_ += static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace gpudiag::import::pickle
