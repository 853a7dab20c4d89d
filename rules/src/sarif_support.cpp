#include "sarif_support.h"

#include <cctype>
#include <system_error>

#include <fmt/format.h>

namespace gpudiag::detail {
namespace {

bool is_unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::filesystem::path absolute_normal(std::string_view file) {
  std::filesystem::path path{std::string(file)};
  if (!path.is_absolute()) {
    std::error_code ec;
    const auto cwd = std::filesystem::current_path(ec);
    path = ec ? std::filesystem::path("/") / path : cwd / path;
  }
  path = path.lexically_normal();
  if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
  return path;
}

}  // namespace

std::string percent_encode_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (const char ch : path) {
    const auto byte = static_cast<unsigned char>(ch);
    if (is_unreserved(byte) || ch == '/') {
      out.push_back(ch);
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned>(byte));
    }
  }
  return out;
}

std::string file_uri(const std::filesystem::path& absolute) {
  return "file://" + percent_encode_path(absolute.generic_string());
}

std::filesystem::path normalized_base(std::string_view base_dir) {
  if (base_dir.empty()) {
    std::error_code ec;
    const auto cwd = std::filesystem::current_path(ec);
    return ec ? std::filesystem::path("/") : absolute_normal(cwd.string());
  }
  return absolute_normal(base_dir);
}

ArtifactUri artifact_uri(std::string_view file, const std::filesystem::path& base) {
  const std::filesystem::path path = absolute_normal(file);
  const std::filesystem::path relative = path.lexically_relative(base);
  const bool inside = !relative.empty() && relative != "." && *relative.begin() != "..";
  if (inside) return {percent_encode_path(relative.generic_string()), true};
  return {file_uri(path), false};
}

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t hash = seed;
  for (const char ch : bytes) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string normalized_line(std::string_view line) {
  std::string out;
  for (const char ch : line) {
    if (!is_space(ch)) out.push_back(ch);
  }
  return out;
}

std::string normalized_message(std::string_view message) {
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    const char ch = message[i];
    if (ch == '0' && i + 1 < message.size() && (message[i + 1] == 'x' || message[i + 1] == 'X')) {
      i += 2;
      while (i < message.size() && std::isxdigit(static_cast<unsigned char>(message[i])) != 0) ++i;
      out += "0x#";
    } else if (std::isdigit(static_cast<unsigned char>(ch)) != 0) {
      while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i])) != 0) ++i;
      out += '#';
    } else if (is_space(ch)) {
      while (i < message.size() && is_space(message[i])) ++i;
      if (!out.empty() && i < message.size()) out += ' ';
    } else {
      out += ch;
      ++i;
    }
  }
  return out;
}

std::string first_paragraph_of_what_goes_wrong(std::string_view markdown) {
  constexpr std::string_view kHeading = "## What goes wrong";
  std::size_t pos = markdown.find(kHeading);
  if (pos == std::string_view::npos) return {};
  pos = markdown.find('\n', pos);
  std::string paragraph;
  while (pos != std::string_view::npos && pos < markdown.size()) {
    const std::size_t begin = pos + 1;
    const std::size_t end = markdown.find('\n', begin);
    std::string_view line = markdown.substr(begin, end == std::string_view::npos ? end : end - begin);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    if (line.empty()) {
      if (!paragraph.empty()) break;
    } else {
      if (line.front() == '#') break;
      if (!paragraph.empty()) paragraph += ' ';
      paragraph += line;
    }
    pos = end;
  }
  // A paragraph that introduces a list ("...on at least one path:") reads as
  // a sentence once the list is cut off.
  if (!paragraph.empty() && paragraph.back() == ':') paragraph.back() = '.';
  return paragraph;
}

}  // namespace gpudiag::detail
