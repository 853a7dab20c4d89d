// Chunk-level walks and rewrites of a .gdtrace image, for fuzzing and for
// tests that look at chunks.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "gdtrace_format.h"

namespace gpudiag::fuzz {

// Calls fn(pos, header) for each whole chunk from the header's end, as the
// reader walks them, and stops at the first that is not whole or has no tag.
template <class Fn>
void for_each_chunk(const char* data, std::size_t size, Fn fn) {
  gdtrace::FileHeader header;
  if (size < sizeof header) return;
  std::memcpy(&header, data, sizeof header);
  std::size_t pos = header.header_size >= sizeof header && header.header_size <= size ? header.header_size : sizeof header;
  gdtrace::ChunkHeader chunk;
  while (size - pos >= sizeof chunk) {
    std::memcpy(&chunk, data + pos, sizeof chunk);
    if (chunk.tag != gdtrace::kChunkTag || chunk.length > size - pos - sizeof chunk) return;
    fn(pos, chunk);
    pos += sizeof chunk + chunk.length;
  }
}

// How many whole chunks of `type` the image holds.
inline std::size_t count_chunks(const std::string& image, gdtrace::ChunkType type) {
  std::size_t n = 0;
  for_each_chunk(image.data(), image.size(),
                 [&](std::size_t, const gdtrace::ChunkHeader& h) { n += h.type == static_cast<std::uint16_t>(type); });
  return n;
}

// Rewrites the CRC of every whole chunk; returns how many. A mutated payload
// almost never keeps its checksum, so without this the reader stops at the
// first changed chunk and the payload parsing behind the check (event spans,
// strings, stacks, modules, RawEvent conversion) is never fuzzed.
inline std::size_t fix_chunk_checksums(char* data, std::size_t size) {
  std::size_t fixed = 0;
  for_each_chunk(data, size, [&](std::size_t pos, gdtrace::ChunkHeader chunk) {
    chunk.crc = gdtrace::checksum(data + pos + sizeof chunk, chunk.length);
    std::memcpy(data + pos, &chunk, sizeof chunk);
    ++fixed;
  });
  return fixed;
}

// The image with every DeflatedEvents chunk inflated into a plain Events
// chunk: a mutation of a compressed payload nearly always stops at the
// inflater, so mutations of event records need the plain form. Ends, as the
// walk does, at the first chunk that is not whole, or at one that does not
// inflate.
inline std::string with_plain_event_chunks(const std::string& image) {
  const std::size_t header = std::min(image.size(), sizeof(gdtrace::FileHeader));
  std::string out = image.substr(0, header);
  libdeflate_decompressor* inflater = libdeflate_alloc_decompressor();
  bool ok = true;
  for_each_chunk(image.data(), image.size(), [&](std::size_t pos, gdtrace::ChunkHeader chunk) {
    const char* payload = image.data() + pos + sizeof chunk;
    if (!ok) return;
    if (chunk.type != static_cast<std::uint16_t>(gdtrace::ChunkType::DeflatedEvents)) {
      out.append(image, pos, sizeof chunk + chunk.length);
      return;
    }
    std::uint32_t count = 0;
    if (chunk.length >= 8) std::memcpy(&count, payload + 4, 4);
    std::string plain(payload, std::min<std::size_t>(chunk.length, 8));
    plain.resize(8 + std::size_t{count} * sizeof(gdtrace::RawEvent));
    ok = chunk.length >= 8 && libdeflate_deflate_decompress(inflater, payload + 8, chunk.length - 8, plain.data() + 8,
                                                            plain.size() - 8, nullptr) == LIBDEFLATE_SUCCESS;
    if (!ok) return;
    chunk.type = static_cast<std::uint16_t>(gdtrace::ChunkType::Events);
    chunk.length = static_cast<std::uint32_t>(plain.size());
    chunk.crc = gdtrace::checksum(plain.data(), plain.size());
    out.append(reinterpret_cast<const char*>(&chunk), sizeof chunk);
    out += plain;
  });
  libdeflate_free_decompressor(inflater);
  return out;
}

}  // namespace gpudiag::fuzz
