// Rewrites the CRC of every whole chunk of a .gdtrace image. A mutated
// payload almost never keeps its checksum, so without this the reader stops
// at the first changed chunk and the payload parsing behind the check (event
// spans, strings, stacks, modules, RawEvent conversion) is never fuzzed.
#pragma once

#include <cstddef>
#include <cstring>

#include "gdtrace_format.h"

namespace gpudiag::fuzz {

// Walks the chunks from the header's end (as the reader does) and stops at
// the first one that is not whole; returns the number of chunks rewritten.
inline std::size_t fix_chunk_checksums(char* data, std::size_t size) {
  gdtrace::FileHeader header;
  if (size < sizeof header) return 0;
  std::memcpy(&header, data, sizeof header);
  std::size_t pos = header.header_size >= sizeof header && header.header_size <= size ? header.header_size : sizeof header;
  std::size_t fixed = 0;
  gdtrace::ChunkHeader chunk;
  while (size - pos >= sizeof chunk) {
    std::memcpy(&chunk, data + pos, sizeof chunk);
    if (chunk.tag != gdtrace::kChunkTag || chunk.length > size - pos - sizeof chunk) break;
    chunk.crc = gdtrace::checksum(data + pos + sizeof chunk, chunk.length);
    std::memcpy(data + pos, &chunk, sizeof chunk);
    pos += sizeof chunk + chunk.length;
    ++fixed;
  }
  return fixed;
}

}  // namespace gpudiag::fuzz
