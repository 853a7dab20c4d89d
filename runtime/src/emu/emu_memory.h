// emu's device memory: one memfd mapped twice. The addresses handed out are
// in a view the host cannot touch (PROT_NONE), so a host dereference faults
// as it does on a GPU; the emulated device works through a second,
// read-write view at a constant offset. Two mappings in all, however many
// allocations (vm.max_map_count stays out of the way).
//
// Blocks are stream-ordered as cudaMallocAsync's pool and PyTorch's caching
// allocator: a block freed on stream S serves S's next allocation at once,
// and other streams once S's work queued before the free (and that of the
// streams it was recorded on) is done, so a block another stream still
// reads really is overwritten (GD004). In checked mode freed blocks wait in
// a bounded quarantine instead, and work that reaches a block freed after
// it was queued is reported. Freed and fresh memory reads as NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emu/emu_streams.h"

namespace gdrt::emu {

// A live block's identity when work was queued: the block at `offset` must
// still be that allocation when the work runs.
struct BlockTag {
  std::size_t offset = 0;
  std::uint64_t generation = 0;
};

class DeviceMemory {
 public:
  DeviceMemory(std::size_t capacity, bool checked, Streams& streams, std::string device_name);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* allocate(std::size_t bytes, StreamId stream);
  void free(void* ptr, StreamId stream, const std::vector<StreamId>& used_on);

  // Is `ptr` an address of this device (live or not)?
  bool contains(const void* ptr) const {
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    return a >= user_ && a < user_ + capacity_;
  }
  // The device's own view of a user address of this device.
  void* device_view(const void* ptr) const {
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(ptr) + (device_ - user_));
  }
  // The live block holding [ptr, ptr + bytes); throws gdrt::Error naming
  // what is wrong (freed, out of bounds) as an illegal address would.
  BlockTag tag(const void* ptr, std::size_t bytes) const;
  // Whether the work at `work` may still use the allocation `tag` names: it
  // is live, or (checked mode) its free is ordered after that work (freed on
  // its stream, recorded on it, or after it by events or the legacy default
  // stream's rules), so the free waits for it.
  bool usable_by(const BlockTag& tag, StreamPoint work) const;
  bool checked() const { return checked_; }
  std::size_t capacity() const { return capacity_; }

  // For the fault handler (async-signal-safe): the allocation holding the
  // address, with the return addresses of its allocating call.
  struct Record {
    std::uintptr_t start;
    std::size_t bytes;
    int frames;
    void* stack[24];
  };
  const Record* record_at(std::uintptr_t address) const noexcept;
  std::uintptr_t user_begin() const noexcept { return user_; }
  std::uintptr_t user_end() const noexcept { return user_ + capacity_; }

 private:
  struct Live {
    std::size_t bytes;
    std::uint64_t generation;
    std::size_t record;
  };
  struct Pending {
    std::size_t offset, bytes;
    StreamId stream;
    bool shared;  // recorded on other streams: only reusable once all are done
    std::vector<StreamPoint> after;
    std::uint64_t generation;
  };
  // All with mutex_ held.
  bool take_same_stream(std::size_t bytes, StreamId stream, std::size_t& offset);
  void settle_pending(bool everything);
  bool take_free(std::size_t bytes, std::size_t& offset);
  void release(std::size_t offset, std::size_t bytes);
  void poison(std::size_t offset, std::size_t bytes);
  std::string out_of_memory_message(std::size_t requested) const;
  std::size_t new_record(std::size_t offset, std::size_t bytes);

  const std::size_t capacity_;
  const bool checked_;
  Streams& streams_;
  const std::string name_;
  int fd_ = -1;
  std::uintptr_t user_ = 0, device_ = 0;

  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;                // offset -> bytes, coalesced
  std::set<std::pair<std::size_t, std::size_t>> by_size_;  // (bytes, offset) of free_
  std::size_t fresh_from_ = 0;                              // never used beyond this offset
  std::vector<Pending> pending_;
  std::deque<Pending> quarantine_;
  std::size_t quarantined_ = 0;
  std::map<std::size_t, Live> live_;  // offset -> block
  // Checked mode: generation of a freed block not yet reusable -> the stream
  // points the free is ordered after.
  std::map<std::uint64_t, std::vector<StreamPoint>> retired_;
  std::size_t live_bytes_ = 0;
  std::uint64_t generation_ = 0;

  Record* records_ = nullptr;  // an mmap'd table the fault handler scans
  std::size_t record_slots_ = 0;
  std::atomic<std::size_t> records_used_{0};
  std::vector<std::size_t> free_records_;
};

}  // namespace gdrt::emu
