// UTF-8 helpers for the emitters: findings carry whatever bytes a source file,
// a symbol name or a CUDA error string held, and every output format must stay
// well formed (JSON/SARIF need valid UTF-8; a terminal must not receive raw
// control sequences from a message).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpudiag::detail {

struct Utf8Char {
  char32_t code_point = 0;  // U+FFFD when !valid
  std::size_t length = 1;   // bytes consumed (1 for an invalid byte)
  bool valid = false;
};

// Decodes the character starting at text[pos] (pos < text.size()). Overlong
// forms, surrogates and values above U+10FFFF are invalid.
Utf8Char decode_utf8(std::string_view text, std::size_t pos);

// `text` with every invalid sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

// Columns a terminal gives the character: 2 for East Asian wide and emoji,
// 0 for combining marks, 1 otherwise.
unsigned display_width(char32_t code_point);

}  // namespace gpudiag::detail
