#include "source_cache.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace gpudiag::detail {

SourceCache::Text& SourceCache::load(const std::string& file) {
  if (auto it = files_.find(file); it != files_.end()) return it->second;
  if (files_.size() >= kMaxFiles) {
    files_.erase(load_order_.front());
    load_order_.pop_front();
  }
  load_order_.push_back(file);
  Text& text = files_[file];
  std::error_code ec;
  // Only regular files: a finding that names /dev/zero or a FIFO must not hang us.
  if (!std::filesystem::is_regular_file(file, ec) || ec) return text;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec || size > kMaxFileBytes) return text;
  std::ifstream in(file, std::ios::binary);
  if (!in) return text;
  text.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    text.bytes.clear();
    return text;
  }
  text.readable = true;
  text.line_starts.push_back(0);
  return text;
}

std::optional<std::string_view> SourceCache::line(const std::string& file, unsigned line) {
  if (file.empty() || line == 0) return std::nullopt;
  Text& text = load(file);
  if (!text.readable) return std::nullopt;
  // Index lazily: only as many line starts as the deepest line asked for.
  while (text.line_starts.size() < line && !text.indexed_to_end) {
    const std::size_t newline = text.bytes.find('\n', text.line_starts.back());
    if (newline == std::string::npos) {
      text.indexed_to_end = true;
    } else {
      text.line_starts.push_back(newline + 1);
    }
  }
  if (text.line_starts.size() < line) return std::nullopt;
  const std::size_t begin = text.line_starts[line - 1];
  // A file ending in "\n" has no line after that newline.
  if (begin == text.bytes.size() && line > 1) return std::nullopt;
  std::size_t end = text.bytes.find('\n', begin);
  if (end == std::string::npos) end = text.bytes.size();
  std::string_view view(text.bytes.data() + begin, end - begin);
  if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
  return view;
}

}  // namespace gpudiag::detail
