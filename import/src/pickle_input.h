// A pickle's bytes as the reader takes them: in memory, or read from a file
// a buffer at a time, so that a snapshot of gigabytes is never held whole.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag::import::pickle {

class Input {
 public:
  explicit Input(std::string_view whole) : whole_(whole), size_(whole.size()) {}
  // A regular file is read a buffer at a time; anything else (a pipe) is
  // read whole first. Throws TraceError when it cannot be opened.
  explicit Input(const std::string& path);
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input();

  std::size_t offset() const { return fd_ < 0 ? pos_ : base_ + begin_; }
  std::size_t left() const { return size_ - offset(); }

  // The next n bytes, valid until the next call; nullptr past the end.
  const char* need(std::size_t n);
  // The bytes up to the next newline, and past it; nullopt when there is
  // none within `longest` bytes.
  std::optional<std::string_view> line(std::size_t longest);

 private:
  const char* peek(std::size_t n);
  bool fill(std::size_t n);  // at least n unread bytes in the buffer

  static constexpr std::size_t kChunk = 4 << 20;
  std::string owned_;  // a pipe's bytes, read whole
  std::string_view whole_;
  std::size_t pos_ = 0;
  int fd_ = -1;
  std::size_t size_ = 0;
  std::vector<char> buffer_;
  std::size_t base_ = 0, begin_ = 0, end_ = 0;  // file offset of buffer_[0]; unread bytes [begin_, end_)
};

}  // namespace gpudiag::import::pickle
