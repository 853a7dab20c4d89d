// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the chunk checksum
// of .gdtrace version 2. It replaced zlib's CRC-32 because the recorder
// checksums every byte it writes, and zlib's software CRC ran at ~1.5 GB/s
// (40-60 ns per 88-byte event), more than the rest of recording together.
// x86-64 computes CRC-32C in hardware (SSE4.2 `crc32`); three independent
// lanes hide the instruction's latency (~15 GB/s here) and are joined with a
// table-driven "append N zero bytes" operator. Elsewhere a table is used.
//
// Header-only so that both the recorder (a shared library) and the reader
// inline it. Async-signal-safe: no allocation, no locks, no lazy statics
// with guards (the CPU test is a relaxed atomic).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace gpudiag::crc32c {

inline constexpr std::uint32_t kPoly = 0x82F63B78u;

namespace detail {

// Product of a and b modulo the polynomial, bit-reflected (x^0 is bit 31).
constexpr std::uint32_t multiply(std::uint32_t a, std::uint32_t b) {
  std::uint32_t product = 0;
  for (std::uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8n) modulo the polynomial: the operator "append n zero bytes".
constexpr std::uint32_t zeros_operator(std::uint64_t n) {
  std::uint32_t result = 1u << 31;  // x^0
  std::uint32_t square = 1u << 23;  // x^8
  for (; n != 0; n >>= 1) {
    if (n & 1) result = multiply(result, square);
    square = multiply(square, square);
  }
  return result;
}

constexpr std::array<std::uint32_t, 256> byte_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr std::array<std::uint32_t, 256> kByteTable = byte_table();

// Bytes per lane of the three-lane hardware loop.
inline constexpr std::size_t kLane = 8192;

// The linear map "append kLane zero bytes", one 256-entry table per byte of
// the CRC register, built at compile time.
constexpr std::array<std::array<std::uint32_t, 256>, 4> shift_tables() {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  const std::uint32_t op = zeros_operator(kLane);
  for (int k = 0; k < 4; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = multiply(op, b << (8 * k));
  return t;
}
inline constexpr auto kShift = shift_tables();

inline std::uint32_t shift_lane(std::uint32_t c) {
  return kShift[0][c & 0xff] ^ kShift[1][(c >> 8) & 0xff] ^ kShift[2][(c >> 16) & 0xff] ^ kShift[3][c >> 24];
}

// Raw register update (no pre/post inversion), portable.
inline std::uint32_t update_table(std::uint32_t c, const unsigned char* p, std::size_t n) {
  while (n--) c = kByteTable[(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline std::uint32_t update_sse42(std::uint32_t c32, const unsigned char* p,
                                                                     std::size_t n) {
  std::uint64_t c = c32;
  while (n >= 3 * kLane) {
    // The register after lane A, and lanes B and C from zero; then
    // crc(A|B|C) = shift(shift(a) ^ b) ^ c, by linearity of the CRC.
    std::uint64_t b = 0, d = 0;
    for (std::size_t i = 0; i < kLane; i += 8) {
      std::uint64_t va, vb, vc;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + kLane + i, 8);
      std::memcpy(&vc, p + 2 * kLane + i, 8);
      c = _mm_crc32_u64(c, va);
      b = _mm_crc32_u64(b, vb);
      d = _mm_crc32_u64(d, vc);
    }
    const std::uint32_t ab = shift_lane(static_cast<std::uint32_t>(c)) ^ static_cast<std::uint32_t>(b);
    c = shift_lane(ab) ^ static_cast<std::uint32_t>(d);
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  std::uint32_t r = static_cast<std::uint32_t>(c);
  for (; n > 0; --n) r = _mm_crc32_u8(r, *p++);
  return r;
}

inline bool have_sse42() noexcept {
  // -1 unknown, 0 no, 1 yes. Racing first calls compute the same answer.
  static std::atomic<int> known{-1};
  int v = known.load(std::memory_order_relaxed);
  if (v < 0) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    v = (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2)) ? 1 : 0;
    known.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}
#endif

}  // namespace detail

// Continues `crc` (0 to start) over n bytes: compute(compute(0, a), b) is the
// CRC of a followed by b, as with zlib's crc32().
inline std::uint32_t compute(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (detail::have_sse42()) return ~detail::update_sse42(~crc, p, n);
#endif
  return ~detail::update_table(~crc, p, n);
}

// Only the portable path (tests compare the two).
inline std::uint32_t compute_portable(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  return ~detail::update_table(~crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace gpudiag::crc32c
