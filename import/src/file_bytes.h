// Reading input files whole, gunzipping when they are gzip (by magic).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpudiag/trace.h"

namespace gpudiag::import {

// Every string returned here has at least this many bytes of spare capacity
// past its end, so a JSON parser that reads ahead (simdjson) can parse it in
// place instead of copying tens of megabytes into a padded buffer.
inline constexpr std::size_t kReadPadding = 64;

// The bytes of `path`, decompressed if gzip. Throws TraceError.
std::string read_file_bytes(const std::string& path);
// Decompresses gzip bytes (throws TraceError naming `name` when corrupt);
// returns the input unchanged when it is not gzip.
std::string maybe_gunzip(std::string_view bytes, const std::string& name);
bool is_gzip(std::string_view bytes);

// Kineto JSON already read (and gunzipped) by read_file_bytes, with its padding.
Trace import_kineto_text(std::string text, const std::string& name);

}  // namespace gpudiag::import
