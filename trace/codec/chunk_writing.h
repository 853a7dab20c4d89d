// Writing chunks to a trace file: every writer of a .gdtrace (the recorder,
// its crash handlers, the segment ring, write_gdtrace) writes a chunk with
// one write(2) on a file opened O_APPEND, and goes on after a short write.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "gdtrace_format.h"

namespace gpudiag::gdtrace {

// False when the file takes no more (errno says why: ENOSPC, EFBIG, ...).
// Async-signal-safe.
inline bool write_all(int fd, const void* data, std::size_t size) noexcept {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

// The bytes of fixed-size fields, in order: a chunk payload's head.
template <class... Word>
std::string words(Word... w) {
  std::string s;
  ((s.append(reinterpret_cast<const char*>(&w), sizeof w)), ...);
  return s;
}

// A whole chunk: its header, then `head` and `body` as its payload.
inline std::string chunk_bytes(ChunkType type, std::string_view head, std::string_view body = {}) {
  std::string chunk(sizeof(ChunkHeader), '\0');
  chunk.append(head).append(body);
  const auto length = static_cast<std::uint32_t>(head.size() + body.size());
  const ChunkHeader h{kChunkTag, static_cast<std::uint16_t>(type), 0, length,
                      checksum(chunk.data() + sizeof(ChunkHeader), length)};
  std::memcpy(chunk.data(), &h, sizeof h);
  return chunk;
}

// A thread's events as a whole chunk: DeflatedEvents when deflating makes
// them smaller, else Events.
inline std::string events_chunk(std::uint32_t tid, std::span<const RawEvent> events, Deflater& deflater) {
  const std::string head = words(tid, static_cast<std::uint32_t>(events.size()));
  const std::size_t bytes = events.size_bytes();
  if (const std::size_t deflated = deflater.compress(events.data(), bytes); deflated != 0)
    return chunk_bytes(ChunkType::DeflatedEvents, head, std::string_view(deflater.out(), deflated));
  return chunk_bytes(ChunkType::Events, head, std::string_view(reinterpret_cast<const char*>(events.data()), bytes));
}

}  // namespace gpudiag::gdtrace
