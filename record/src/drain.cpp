// Getting events from the buffers into the file: chunk framing, and draining
// a buffer's unwritten events with one writev(2) straight from the buffer
// (no staging copy), or from the writer thread's compressed copy. Everything
// here is async-signal-safe, for the crash handlers, except
// write_small_chunk with a payload over 4 KiB, and compressing.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "recorder_state.h"

namespace gpudiag::rec::detail {

namespace {

// A short write (disk full, a signal) continues where it stopped.
bool writev_all(int fd, iovec* iov, int n) noexcept {
  while (n > 0) {
    const ssize_t w = ::writev(fd, iov, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    auto done = static_cast<std::size_t>(w);
    while (n > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
  return true;
}

}  // namespace

bool write_chunk(int fd, gdtrace::ChunkType type, char* staging, std::uint32_t payload_bytes) noexcept {
  gdtrace::ChunkHeader h{};
  h.tag = gdtrace::kChunkTag;
  h.type = static_cast<std::uint16_t>(type);
  h.length = payload_bytes;
  h.crc = gdtrace::checksum(staging + sizeof h, payload_bytes);
  std::memcpy(staging, &h, sizeof h);
  return write_all(fd, staging, sizeof h + payload_bytes);
}

bool write_small_chunk(int fd, gdtrace::ChunkType type, const void* payload, std::uint32_t bytes) noexcept {
  char local[4096];
  char* staging = local;
  std::vector<char> heap;
  if (bytes + sizeof(gdtrace::ChunkHeader) > sizeof local) {
    heap.resize(bytes + sizeof(gdtrace::ChunkHeader));
    staging = heap.data();
  }
  std::memcpy(staging + sizeof(gdtrace::ChunkHeader), payload, bytes);
  return write_chunk(fd, type, staging, bytes);
}

void stop_recording_after(Recorder& r, int error) noexcept {
  int none = 0;
  if (r.write_error.compare_exchange_strong(none, error)) g_enabled.store(false, std::memory_order_release);
}

void stop_on_write_failure(Recorder& r, int error) noexcept {
  if (error == ENOSPC || error == EFBIG || error == EDQUOT || error == ENOMEM) stop_recording_after(r, error);
}

void drain_buffer(Recorder& r, Buffer& b, gdtrace::Deflater* deflater, DrainFrom from) noexcept {
  // flushed before committed: recycling resets committed first, so a stale
  // pair can only look empty, never like a range to write. `readers` stays
  // up until the write is done: recycling waits for it, and an owner that
  // must know its events are in the file (ensure_written) watches it.
  // Most buffers have nothing new when the writer thread passes: two loads,
  // not a locked add on a cache line their owner is writing.
  if (b.committed.load(std::memory_order_acquire) <= b.flushed.load(std::memory_order_acquire)) return;
  // In flight from before the claim to the end of the write: a crash
  // handler waits for what is in flight, and must not find a range claimed
  // (so not its to write) but still being compressed.
  r.writes_in_flight.fetch_add(1, std::memory_order_acq_rel);
  b.readers.fetch_add(1);
  std::uint32_t f = b.flushed.load();
  const std::uint32_t c = b.committed.load();
  if (c <= f || !b.flushed.compare_exchange_strong(f, c)) {
    b.readers.fetch_sub(1);
    r.writes_in_flight.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  const std::uint32_t count = c - f;
  // A bounded recording's files keep to their shares as closely as the
  // chunks written to them: a range may be a whole buffer of hundreds of
  // KiB (a writer that waited for a core writes uncompressed), so it goes
  // in pieces, each to the file events go to then.
  const std::uint32_t piece = r.ring != nullptr ? r.ring->events_per_chunk() : count;
  for (std::uint32_t done = 0; done < count;) {
    const std::uint32_t n = std::min(piece, count - done);
    const std::uint32_t head[2] = {b.tid, n};
    const void* body = b.events + f + done;
    std::size_t body_bytes = std::size_t{n} * sizeof(gdtrace::RawEvent);
    auto type = gdtrace::ChunkType::Events;
    if (deflater != nullptr) {
      if (const std::size_t deflated = deflater->compress(body, body_bytes); deflated != 0) {
        body = deflater->out();
        body_bytes = deflated;
        type = gdtrace::ChunkType::DeflatedEvents;
      }
    }
    const auto bytes = static_cast<std::uint32_t>(8 + body_bytes);
    const gdtrace::ChunkHeader h{gdtrace::kChunkTag, static_cast<std::uint16_t>(type), 0, bytes,
                                 gdtrace::checksum(body, body_bytes, gdtrace::checksum(head, 8))};
    iovec iov[3] = {{const_cast<gdtrace::ChunkHeader*>(&h), sizeof h},
                    {const_cast<std::uint32_t*>(head), 8},
                    {const_cast<void*>(body), body_bytes}};
    if (!writev_all(events_fd(r), iov, 3)) {
      stop_on_write_failure(r, errno);
      break;
    }
    if (r.ring != nullptr) {
      r.ring->took_events();
      if (from == DrainFrom::Thread) r.ring->make_next_ready();
    }
    done += n;
  }
  r.events_written.fetch_add(count, std::memory_order_relaxed);
  b.readers.fetch_sub(1);
  r.writes_in_flight.fetch_sub(1, std::memory_order_acq_rel);
}

void drain_all(Recorder& r, gdtrace::Deflater* deflater, DrainFrom from) noexcept {
  // Selection by acquisition order, O(pool_size^2): no allocation, so the
  // crash handlers can call it, and the pool is a few dozen buffers.
  for (std::uint64_t after = 0;;) {
    Buffer* next = nullptr;
    std::uint64_t next_acquired = UINT64_MAX;
    for (std::uint32_t i = 0; i < r.pool_size; ++i) {
      const std::uint64_t a = r.pool[i].acquired.load(std::memory_order_relaxed);
      if (a > after && a < next_acquired) {
        next = &r.pool[i];
        next_acquired = a;
      }
    }
    if (next == nullptr) break;
    // A thread waiting for its events to be written waits for no compression.
    drain_buffer(r, *next, r.owners_waiting.load(std::memory_order_relaxed) == 0 ? deflater : nullptr, from);
    after = next_acquired;
  }
  const std::uint64_t dropped = r.dropped.load(std::memory_order_relaxed);
  if (r.dropped_written.exchange(dropped) != dropped) {
    r.writes_in_flight.fetch_add(1, std::memory_order_acq_rel);
    write_small_chunk(r.fd, gdtrace::ChunkType::Dropped, &dropped, sizeof dropped);
    r.writes_in_flight.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace gpudiag::rec::detail
