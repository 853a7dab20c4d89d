#include "file_bytes.h"

#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gpudiag/trace.h"

namespace gpudiag::import {

namespace {
// A gzip bomb must not eat the machine: traces larger than this are refused.
constexpr std::size_t kMaxInflated = std::size_t{8} << 30;
}  // namespace

bool is_gzip(std::string_view b) {
  return b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b;
}

std::string maybe_gunzip(std::string_view bytes, const std::string& name) {
  if (!is_gzip(bytes)) {
    std::string copy;
    copy.reserve(bytes.size() + kReadPadding);
    copy.assign(bytes);
    return copy;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw TraceError(name + ": cannot initialise gzip decompression");
  std::string out;
  // The gzip trailer holds the size mod 2^32: a good first guess, saving the
  // copies of repeated doubling on large traces.
  std::size_t guess = bytes.size() * 4 + 4096;
  if (bytes.size() >= 18) {
    std::uint32_t isize = 0;
    std::memcpy(&isize, bytes.data() + bytes.size() - 4, 4);
    // Trusted only within a plausible ratio: a corrupt trailer must not make
    // us allocate gigabytes up front.
    if (isize > guess && isize <= bytes.size() * 64) guess = std::size_t{isize} + kReadPadding;
  }
  out.resize(guess);
  std::size_t produced = 0;  // total_out restarts at each gzip member
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= kMaxInflated) {
        inflateEnd(&zs);
        throw TraceError(name + ": decompresses to more than 8 GiB; refusing");
      }
      out.resize(out.size() * 2);
    }
    const std::size_t room = std::min<std::size_t>(out.size() - produced, 1u << 30);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members: continue with the next one.
      if (zs.avail_in > 0 && is_gzip(std::string_view(reinterpret_cast<const char*>(zs.next_in), zs.avail_in))) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      throw TraceError(name + ": gzip data is corrupt (" + why + ")");
    }
    if (zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw TraceError(name + ": gzip data is cut short");
    }
  }
  inflateEnd(&zs);
  if (out.size() - produced < kReadPadding) out.resize(produced + kReadPadding);  // keeps the padding in capacity
  out.resize(produced);
  return out;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  // One read of the whole file (an istreambuf_iterator copies byte by byte).
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::string raw;
  if (size > 0) {
    raw.reserve(static_cast<std::size_t>(size) + kReadPadding);
    raw.resize(static_cast<std::size_t>(size));
    in.read(raw.data(), size);
    raw.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (!in.eof() && in.peek() != std::char_traits<char>::eof()) {  // grew while we read (or a pipe): take the rest too
    raw.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (is_gzip(raw)) return maybe_gunzip(raw, path);
  if (raw.capacity() - raw.size() < kReadPadding) raw.reserve(raw.size() + kReadPadding);
  return raw;
}

}  // namespace gpudiag::import
