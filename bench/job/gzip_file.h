// A file's text, gunzipped when it is gzip; text written gzipped, as
// PyTorch users keep their profiler traces (rank0.kineto.json.gz).
#pragma once

#include <libdeflate.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "gpudiag/trace_io.h"

namespace gpudiag::bench {

inline std::string read_maybe_gzipped(const std::string& path) {
  std::string raw = read_file(path);
  if (raw.size() < 18 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b)
    return raw;
  std::uint32_t size = 0;  // the trailer's size mod 2^32: exact for the small traces this reads
  std::memcpy(&size, raw.data() + raw.size() - 4, 4);
  std::string text(size, '\0');
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(libdeflate_alloc_decompressor(),
                                                                                 libdeflate_free_decompressor);
  if (!d || libdeflate_gzip_decompress(d.get(), raw.data(), raw.size(), text.data(), text.size(), nullptr) !=
                LIBDEFLATE_SUCCESS)
    throw std::runtime_error(path + ": cannot gunzip it");
  return text;
}

inline void write_gzipped(const std::string& path, const std::string& text) {
  std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> c(libdeflate_alloc_compressor(6),
                                                                             libdeflate_free_compressor);
  if (!c) throw std::runtime_error("cannot set up gzip compression");
  std::string out(libdeflate_gzip_compress_bound(c.get(), text.size()), '\0');
  const std::size_t n = libdeflate_gzip_compress(c.get(), text.data(), text.size(), out.data(), out.size());
  std::ofstream file(path, std::ios::binary);
  if (n == 0 || !file.write(out.data(), static_cast<std::streamsize>(n)))
    throw std::runtime_error("cannot write " + path);
}

}  // namespace gpudiag::bench
