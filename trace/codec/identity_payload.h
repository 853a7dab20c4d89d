// The payload of an Identity chunk (FORMAT.md): the process's pid, its host,
// its place in a distributed job as its launcher's variables said it, and the
// trace's clock against the UNIX epoch. The recorder encodes it into a buffer
// of its own (nothing allocated: it may run in a child just forked), the
// writer into a string; the reader decodes it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gpudiag::gdtrace {

inline constexpr std::uint32_t kEpochOffsetKnown = 1;  // IdentityPayload::flags

struct IdentityPayload {
  std::int64_t pid = 0;
  std::int32_t rank = -1;        // -1: not said
  std::int32_t local_rank = -1;  // -1: not said
  std::int32_t world_size = 0;   // 0: not said
  std::uint32_t flags = 0;       // kEpochOffsetKnown
  // CLOCK_REALTIME less the trace's clock (CLOCK_MONOTONIC), read back to
  // back: epoch ns = trace ns + epoch_offset_ns, to within the uncertainty.
  std::int64_t epoch_offset_ns = 0;
  std::uint64_t epoch_offset_uncertainty_ns = 0;
  std::string_view launcher;  // "torchrun", "openmpi", "mpich", "slurm"; "" when no launcher said the rank
  std::string_view host;
  std::string_view backend;   // the process group's ("nccl"); the recorder does not know it
};

// i64 pid, i32 rank, i32 local rank, i32 world size, u32 flags, i64 epoch
// offset, u64 its uncertainty, u16 x 3 the lengths of launcher, host and
// backend, u16 0; then their bytes. Readers ignore bytes past them.
inline constexpr std::size_t kIdentityHead = 48;

inline std::size_t identity_size(const IdentityPayload& id) noexcept {
  return kIdentityHead + id.launcher.size() + id.host.size() + id.backend.size();
}

// Writes the payload into `out` and returns its size, or 0 when it does not
// fit in `capacity` bytes or a name is over 65535 bytes. Async-signal-safe.
inline std::size_t encode_identity(const IdentityPayload& id, char* out, std::size_t capacity) noexcept {
  const std::size_t size = identity_size(id);
  if (size > capacity || id.launcher.size() > 0xffff || id.host.size() > 0xffff || id.backend.size() > 0xffff) return 0;
  const auto put = [&out](const auto& v) {
    std::memcpy(out, &v, sizeof v);
    out += sizeof v;
  };
  put(id.pid), put(id.rank), put(id.local_rank), put(id.world_size), put(id.flags);
  put(id.epoch_offset_ns), put(id.epoch_offset_uncertainty_ns);
  put(static_cast<std::uint16_t>(id.launcher.size())), put(static_cast<std::uint16_t>(id.host.size()));
  put(static_cast<std::uint16_t>(id.backend.size())), put(std::uint16_t{0});
  for (const std::string_view s : {id.launcher, id.host, id.backend}) {
    if (!s.empty()) std::memcpy(out, s.data(), s.size());
    out += s.size();
  }
  return size;
}

// False when the payload is malformed. Its strings point into `p`. A place
// in a job that cannot be (a rank not below the world size, a negative
// size) reads as not said.
inline bool decode_identity(const char* p, std::uint32_t n, IdentityPayload& out) noexcept {
  if (n < kIdentityHead) return false;
  const auto get = [p](std::size_t at, auto& v) { std::memcpy(&v, p + at, sizeof v); };
  IdentityPayload id;
  get(0, id.pid), get(8, id.rank), get(12, id.local_rank), get(16, id.world_size), get(20, id.flags);
  get(24, id.epoch_offset_ns), get(32, id.epoch_offset_uncertainty_ns);
  std::uint16_t lengths[3];
  get(40, lengths);
  if (kIdentityHead + std::size_t{lengths[0]} + lengths[1] + lengths[2] > n) return false;
  const char* s = p + kIdentityHead;
  id.launcher = std::string_view(s, lengths[0]);
  id.host = std::string_view(s + lengths[0], lengths[1]);
  id.backend = std::string_view(s + lengths[0] + lengths[1], lengths[2]);
  if (id.world_size <= 0 || id.rank < 0 || id.rank >= id.world_size) id.rank = -1, id.world_size = 0;
  if (id.world_size == 0 || id.local_rank < 0 || id.local_rank >= id.world_size) id.local_rank = -1;
  out = id;
  return true;
}

}  // namespace gpudiag::gdtrace
