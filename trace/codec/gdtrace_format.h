// The .gdtrace binary layout (documented in FORMAT.md), shared by the
// in-process recorder (record/src) and the reader and writer (trace/src). Internal:
// users read traces through gpudiag/trace.h. All integers little-endian.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include <libdeflate.h>

namespace gpudiag::gdtrace {

inline constexpr char kMagic[8] = {'G', 'D', 'T', 'R', 'A', 'C', 'E', '\0'};
// 2: events may come in DeflatedEvents chunks, which a version-1 reader
// would skip without a word.
// 3: events may continue in segment files (Segment chunks), which a
// version-2 reader would skip without a word. A file that needs no segment
// is written as version 2, which older readers read.
inline constexpr std::uint32_t kVersion = 3;
inline constexpr std::uint32_t kSingleFileVersion = 2;
inline constexpr std::uint32_t kChunkTag = 0x4b434447;  // "GDCK"

struct FileHeader {  // 32 bytes at offset 0
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_size;  // 32; readers skip what they do not know
  std::uint64_t pid;
  std::uint64_t start_ns;     // CLOCK_MONOTONIC when recording started
};
static_assert(sizeof(FileHeader) == 32);

enum class ChunkType : std::uint16_t {
  Events = 1,   // u32 tid, u32 count, count x RawEvent
  String = 2,   // u32 id, then the bytes (no terminator)
  Stack = 3,    // u32 id, u32 frame count, u64 return addresses (innermost first)
  Module = 4,   // u64 base, u64 low, u64 size, then the path bytes
  Dropped = 5,  // u64 events dropped so far (monotonic; the reader keeps the max)
  Process = 6,  // i64 pid, i64 ppid, then the command line (arguments separated by NUL)
  End = 7,      // u64 events written; present when the recording was stopped cleanly
  // Written by the crash handler, with write(2) only: i32 signal, i32 si_code,
  // u64 fault address, u64 time, u32 tid, u16 frame count, u16 flags, u64
  // frames (innermost first; kCrashStartsAtFault: the first is the faulting
  // instruction, not a return address).
  Crash = 8,
  // Written by the copy guard's fault handler, with write(2) only: u64 time,
  // u64 fault address, u64 correlation of the guarded copy, u32 tid, u16
  // frame count, u16 flags (kCrashStartsAtFault, kGuardedWrite,
  // kGuardedAccessUnknown), u64 frames (innermost first).
  GuardedAccess = 9,
  // u32 tid, u32 count, then the count x RawEvent of an Events chunk as one
  // raw DEFLATE stream (RFC 1951). Since version 2.
  DeflatedEvents = 10,
  // u64 time: every event that a thread had recorded by then is in a chunk
  // before this one. Written by the recorder's writer thread after each pass
  // that wrote events, so that a reader of a file without its end knows up
  // to when its evidence is whole.
  Drained = 11,
  // u32 seq, then the segment file's name (no '/'), in the keep file's
  // folder: the process's events continue there. Since version 3.
  Segment = 12,
  // u32 seq, u32 0, u64 the latest event time in it: the segment was
  // removed, after what the keep file keeps of it was written.
  SegmentDropped = 13,
  // u32 seq, u32 count, count x RawEvent (tid set), or (when shorter) their
  // raw DEFLATE stream: what the keep file keeps of segment seq before it is
  // dropped. A reader that still finds the
  // segment (the process died before removing it) reads the segment instead.
  Retained = 14,
  // Where the process stands: its pid, host and place in a distributed job
  // (as its launcher's variables said it), and the trace's clock against
  // the UNIX epoch. Written once when recording starts (identity_payload.h).
  Identity = 15,
  // i32 the process's exit status (0..255), u32 0: written before the End
  // chunk when the process exits (exit, a return from main, _exit).
  Exit = 16,
};

inline constexpr std::uint16_t kCrashStartsAtFault = 1;
inline constexpr std::uint16_t kGuardedWrite = 2;          // the access was a write
inline constexpr std::uint16_t kGuardedAccessUnknown = 4;  // read or write is not known

struct ChunkHeader {  // 16 bytes, then `length` bytes of payload
  std::uint32_t tag;     // kChunkTag
  std::uint16_t type;    // ChunkType
  std::uint16_t flags;   // 0
  std::uint32_t length;  // payload bytes
  std::uint32_t crc;     // CRC-32 of the payload (zlib's polynomial and check value)
};
static_assert(sizeof(ChunkHeader) == 16);

// ChunkHeader::crc. libdeflate computes zlib's CRC-32 with carry-less
// multiplication (tens of GB/s) where zlib's table walk costs more than
// recording the event; it allocates nothing and takes no lock, so the crash
// handler may call it.
inline std::uint32_t checksum(const void* data, std::size_t n, std::uint32_t crc = 0) noexcept {
  return libdeflate_crc32(crc, data, n);
}

// Upper bound a reader accepts for one chunk, so garbage cannot make it
// allocate gigabytes.
inline constexpr std::uint32_t kMaxChunk = 64u << 20;

// One event, fixed size. Fields by kind (a/b/c are small enums, x a 32-bit
// value, p the 64-bit payload words), see FORMAT.md:
//   Alloc/Free   a=MemKind, t0=time, p0=addr, p1=bytes
//   Memcpy       a=CopyKind b=src MemKind c=dst MemKind, flags bit0=async,
//                x=peer device, p0=dst p1=src p2=bytes
//   Memset       a=MemKind, flags bit0=async, x=value, p0=addr p1=bytes
//   Kernel       x=name, p0..p3 = u32 grid[3], block[3], shared bytes, 0
//   Sync         a=SyncKind, p0=event
//   Api          a=ApiDomain, x=name, p0=status (int32), p1=symbol (the
//                launched kernel's name string), tid=calling thread when
//                another thread recorded the call (CUPTI), else 0
//   HostAccess   a=AccessKind, t0=time, p0=addr, p1=bytes
//   OutOfMemory  t0=time, p0=requested, p1=free, p2=capacity, p3=largest free block
//   Finding      t0=time, x=rule id string, p0=message string
//   MemoryCounter t0=time, p0=allocated, p1=reserved
//   Device       device, x=name, p0=memory bytes, p1=UUID string (0: not said)
//   Stream       device, stream, x=name
//   Range        t0=start, t1=end, x=name
//   KernelArg    a=MemKind pointed into, x=parameter index, p0=value
// event_codec.h maps each event's fields onto these, once for both directions.
struct RawEvent {
  std::uint8_t kind;  // EventKind
  std::uint8_t a, b, c;
  std::int32_t device;
  std::uint64_t t0, t1;
  std::uint64_t stream;
  std::uint64_t correlation;
  std::uint32_t stack;
  std::uint32_t x;
  std::uint16_t flags;
  std::uint16_t reserved0;
  std::uint32_t tid;  // the thread the event happened on, when not the chunk's (0: the chunk's)
  std::uint64_t p[4];
};
static_assert(sizeof(RawEvent) == 88);

inline constexpr std::uint16_t kFlagAsync = 1;
inline constexpr std::uint16_t kFlagHandleKnown = 2;  // Stream: p0 is the CUDA stream handle

// Events compress about 6 times at level 1, at 440 MB/s on one core (a
// PyTorch UNet's trace recorded on an H200); level 6 saves another 11% at a
// third of the speed, on the recorder's writer thread, whose CPU time the
// traced program pays for.
inline constexpr int kDeflateLevel = 1;

// Compresses event records for a DeflatedEvents chunk, unless that would not
// make them smaller. Room for `capacity_events` compressed is made once, so
// compressing allocates nothing; one Deflater serves one thread at a time.
class Deflater {
 public:
  explicit Deflater(std::size_t capacity_events) noexcept
      : compressor_(libdeflate_alloc_compressor(kDeflateLevel)), room_(capacity_events * sizeof(RawEvent)) {
    if (compressor_ != nullptr) out_ = new (std::nothrow) char[room_];
  }
  ~Deflater() {
    libdeflate_free_compressor(compressor_);
    delete[] out_;
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // The compressed size of `bytes` at data, in out(); 0 when it would not be
  // smaller, or when the compressor could not be made: then write them plain.
  std::size_t compress(const void* data, std::size_t bytes) noexcept {
    if (out_ == nullptr || bytes < 2) return 0;
    return libdeflate_deflate_compress(compressor_, data, bytes, out_, std::min(room_, bytes - 1));
  }
  const char* out() const noexcept { return out_; }

 private:
  libdeflate_compressor* compressor_ = nullptr;
  char* out_ = nullptr;
  std::size_t room_ = 0;
};

}  // namespace gpudiag::gdtrace
