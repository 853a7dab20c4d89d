// The bytes of one trace file as the .gdtrace reader walks its chunks:
// either the whole file in memory, or, for a trace read in passes because
// its events do not fit in memory, read with pread(2) a piece at a time so
// that no more than one chunk is held.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag {

class FileView {
 public:
  // The whole file, already in memory (the caller's bytes, or `owned`).
  explicit FileView(std::string_view whole) : whole_(whole), size_(whole.size()) {}
  explicit FileView(std::string&& owned) : owned_(std::move(owned)), whole_(owned_), size_(owned_.size()) {}
  // Opened for reading a piece at a time; its size is the size now.
  // Throws TraceError naming the path when it cannot be opened.
  struct Piecewise {};
  FileView(Piecewise, const std::string& path);
  // Not moved: whole_ may point into owned_.
  FileView(const FileView&) = delete;
  FileView& operator=(const FileView&) = delete;
  ~FileView();

  std::size_t size() const { return size_; }
  // The n bytes at pos (pos + n <= size()). Read piece by piece, they stay
  // valid until the next call; whole, while this lives. Throws TraceError
  // when the file has shrunk since it was opened.
  const char* at(std::size_t pos, std::size_t n);
  bool whole() const { return fd_ < 0; }

 private:
  std::string owned_;
  std::string_view whole_;
  std::size_t size_ = 0;
  int fd_ = -1;
  std::string path_;
  std::vector<char> piece_;
};

}  // namespace gpudiag
