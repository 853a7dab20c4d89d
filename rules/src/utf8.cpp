#include "utf8.h"

namespace gpudiag::detail {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

Utf8Char decode_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true};
  std::size_t length = 0;
  char32_t cp = 0;
  char32_t minimum = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, minimum = 0x10000;
  } else {
    return {kReplacement, 1, false};
  }
  if (pos + length > text.size()) return {kReplacement, 1, false};
  for (std::size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    if (!is_continuation(byte)) return {kReplacement, 1, false};
    cp = (cp << 6) | (byte & 0x3F);
  }
  if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {kReplacement, 1, false};
  }
  return {cp, length, true};
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8(text, pos);
    if (c.valid) {
      out.append(text.substr(pos, c.length));
    } else {
      append_utf8(out, kReplacement);
    }
    pos += c.length;
  }
  return out;
}

unsigned display_width(char32_t cp) {
  // Combining diacritical marks and zero-width joiners/spaces take no column.
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || cp == 0xFEFF) {
    return 0;
  }
  const bool wide = (cp >= 0x1100 && cp <= 0x115F) ||   // Hangul Jamo
                    (cp >= 0x2E80 && cp <= 0xA4CF) ||   // CJK, Kana, Yi
                    (cp >= 0xAC00 && cp <= 0xD7A3) ||   // Hangul syllables
                    (cp >= 0xF900 && cp <= 0xFAFF) ||   // CJK compatibility
                    (cp >= 0xFE30 && cp <= 0xFE4F) ||   // CJK compatibility forms
                    (cp >= 0xFF00 && cp <= 0xFF60) ||   // fullwidth forms
                    (cp >= 0xFFE0 && cp <= 0xFFE6) ||
                    (cp >= 0x1F300 && cp <= 0x1F64F) || // emoji
                    (cp >= 0x1F900 && cp <= 0x1F9FF) ||
                    (cp >= 0x20000 && cp <= 0x3FFFD);   // CJK extensions
  return wide ? 2 : 1;
}

}  // namespace gpudiag::detail
