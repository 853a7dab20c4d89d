#include "emu/emu_memory.h"

#include <execinfo.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/hooks.h"
#include "gdrt/error.h"

namespace gdrt::emu {
namespace {

constexpr std::size_t kAlign = 256;  // cudaMalloc's alignment
constexpr std::size_t kRecordSlots = std::size_t{1} << 18;

std::size_t rounded(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign; }

std::string bytes_text(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

[[noreturn]] void system_error(const std::string& what) {
  throw Error("emu: " + what + ": " + std::strerror(errno));
}

}  // namespace

DeviceMemory::DeviceMemory(std::size_t capacity, bool checked, Streams& streams, std::string device_name)
    : capacity_(rounded(capacity)), checked_(checked), streams_(streams), name_(std::move(device_name)) {
  fd_ = memfd_create("gdrt-emu-device-memory", MFD_CLOEXEC);
  if (fd_ < 0) system_error("memfd_create");
  if (ftruncate(fd_, static_cast<off_t>(capacity_)) != 0) system_error("sizing device memory");
  void* user = mmap(nullptr, capacity_, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (user == MAP_FAILED) system_error("mapping the host's view of device memory");
  void* device = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (device == MAP_FAILED) system_error("mapping the device's view of device memory");
  user_ = reinterpret_cast<std::uintptr_t>(user);
  device_ = reinterpret_cast<std::uintptr_t>(device);
  free_.emplace(0, capacity_);
  by_size_.emplace(capacity_, 0);
  void* table = mmap(nullptr, kRecordSlots * sizeof(Record), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (table == MAP_FAILED) system_error("mapping the allocation table");
  records_ = static_cast<Record*>(table);
  record_slots_ = kRecordSlots;
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now, not first inside an allocation
}

DeviceMemory::~DeviceMemory() {
  munmap(reinterpret_cast<void*>(user_), capacity_);
  munmap(reinterpret_cast<void*>(device_), capacity_);
  munmap(records_, record_slots_ * sizeof(Record));
  close(fd_);
}

void DeviceMemory::poison(std::size_t offset, std::size_t bytes) {
  // All-ones bytes are NaN in f16, f32 and f64 alike.
  std::memset(reinterpret_cast<void*>(device_ + offset), 0xff, bytes);
}

std::size_t DeviceMemory::new_record(std::size_t offset, std::size_t bytes) {
  std::size_t slot;
  if (!free_records_.empty()) {
    slot = free_records_.back();
    free_records_.pop_back();
  } else {
    slot = records_used_.load(std::memory_order_relaxed);
    if (slot == record_slots_) return record_slots_;  // table full: this block goes unnamed in a fault
    records_used_.store(slot + 1, std::memory_order_release);
  }
  Record& r = records_[slot];
  r.bytes = bytes;
  r.frames = backtrace(r.stack, 24);
  __atomic_store_n(&r.start, user_ + offset, __ATOMIC_RELEASE);
  return slot;
}

const DeviceMemory::Record* DeviceMemory::record_at(std::uintptr_t address) const noexcept {
  const std::size_t used = records_used_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < used; ++i) {
    const std::uintptr_t start = __atomic_load_n(&records_[i].start, __ATOMIC_ACQUIRE);
    if (start != 0 && address >= start && address < start + records_[i].bytes) return &records_[i];
  }
  return nullptr;
}

bool DeviceMemory::take_same_stream(std::size_t bytes, StreamId stream, std::size_t& offset) {
  Pending* best = nullptr;
  for (Pending& p : pending_)
    if (p.stream == stream && !p.shared && p.bytes >= bytes && (!best || p.bytes < best->bytes)) best = &p;
  if (!best) return false;
  offset = best->offset;
  best->offset += bytes;
  best->bytes -= bytes;
  if (best->bytes == 0) pending_.erase(pending_.begin() + (best - pending_.data()));
  return true;
}

void DeviceMemory::settle_pending(bool everything) {
  std::vector<Pending> still;
  for (Pending& p : pending_) {
    bool done = everything;
    if (!done) {
      done = true;
      for (const StreamPoint& point : p.after) done = done && streams_.done(point);
    }
    if (!done) {
      still.push_back(std::move(p));
      continue;
    }
    if (p.shared) poison(p.offset, p.bytes);
    if (checked_) {
      quarantined_ += p.bytes;
      quarantine_.push_back(std::move(p));
    } else {
      release(p.offset, p.bytes);
    }
  }
  pending_ = std::move(still);
  // The quarantine keeps recent frees out of reuse, up to an eighth of the device.
  while (!quarantine_.empty() && (everything || quarantined_ > capacity_ / 8)) {
    quarantined_ -= quarantine_.front().bytes;
    retired_.erase(quarantine_.front().generation);
    release(quarantine_.front().offset, quarantine_.front().bytes);
    quarantine_.pop_front();
  }
}

void DeviceMemory::release(std::size_t offset, std::size_t bytes) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + bytes == next->first) {
    by_size_.erase({next->second, next->first});
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      by_size_.erase({prev->second, prev->first});
      offset = prev->first;
      bytes += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(offset, bytes);
  by_size_.emplace(bytes, offset);
}

bool DeviceMemory::take_free(std::size_t bytes, std::size_t& offset) {
  auto it = by_size_.lower_bound({bytes, 0});
  if (it == by_size_.end()) return false;
  const auto [size, at] = *it;
  by_size_.erase(it);
  free_.erase(at);
  if (size > bytes) {
    free_.emplace(at + bytes, size - bytes);
    by_size_.emplace(size - bytes, at + bytes);
  }
  offset = at;
  // Memory used before was poisoned when it was freed; fresh memory now.
  if (at + bytes > fresh_from_) {
    const std::size_t from = std::max(at, fresh_from_);
    poison(from, at + bytes - from);
    fresh_from_ = at + bytes;
  }
  return true;
}

void* DeviceMemory::allocate(std::size_t requested, StreamId stream) {
  const std::size_t bytes = rounded(requested);
  std::unique_lock lock(mutex_);
  std::size_t offset = 0;
  bool found = (!checked_ && take_same_stream(bytes, stream, offset));
  if (!found) {
    settle_pending(false);
    found = take_free(bytes, offset);
  }
  if (!found && (!pending_.empty() || !quarantine_.empty())) {
    // What a caching allocator does before giving up: wait for the streams
    // and take back everything freed.
    lock.unlock();
    streams_.synchronize_all();
    lock.lock();
    settle_pending(true);
    found = take_free(bytes, offset);
  }
  if (!found) {
    std::size_t free_bytes = 0;
    for (auto& [o, b] : free_) free_bytes += b;
    const std::string message = out_of_memory_message(requested);
    lock.unlock();
    hooks::out_of_memory(Device::parse(name_), requested, free_bytes, capacity_);
    hooks::finding("GD008", message);
    throw Error("GD008", message);
  }
  live_.emplace(offset, Live{bytes, ++generation_, new_record(offset, requested)});
  live_bytes_ += bytes;
  return reinterpret_cast<void*>(user_ + offset);
}

void DeviceMemory::free(void* ptr, StreamId stream, const std::vector<StreamId>& used_on) {
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(ptr) - user_;
  const auto live = [&]() -> std::map<std::size_t, Live>::iterator {  // mutex_ held
    auto it = live_.find(offset);
    if (it == live_.end()) throw Error("emu: free of " + std::to_string(reinterpret_cast<std::uintptr_t>(ptr)) +
                                       ", which is not a live allocation of " + name_);
    return it;
  };
  std::size_t bytes = 0;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    const auto it = live();
    bytes = it->second.bytes;
    generation = it->second.generation;
  }
  // Poisoned in stream order, so work queued before the free still sees the
  // data; a block other streams use is poisoned once they are done with it.
  // The free takes its place in stream order before the block stops being
  // live, so that checked mode never sees it neither live nor retired.
  Pending p{offset, bytes, stream, !used_on.empty(), {}, generation};
  if (p.shared) {
    p.after.push_back(streams_.now(stream));
    for (StreamId other : used_on) p.after.push_back(streams_.now(other));
  } else {
    // A destroyed stream's work is done (destroying waits for it): the free
    // then needs only the legacy default stream's order.
    const auto poison_it = [this, offset, bytes] { poison(offset, bytes); };
    try {
      p.after.push_back(streams_.enqueue(stream, poison_it));
    } catch (const Error&) {
      p.stream = 0;
      p.after.push_back(streams_.enqueue(0, poison_it));
    }
  }
  std::lock_guard lock(mutex_);
  const auto it = live();
  if (checked_) retired_[generation] = p.after;
  if (it->second.record < record_slots_) {
    __atomic_store_n(&records_[it->second.record].start, 0, __ATOMIC_RELEASE);
    free_records_.push_back(it->second.record);
  }
  live_bytes_ -= bytes;
  live_.erase(it);
  pending_.push_back(std::move(p));
}

BlockTag DeviceMemory::tag(const void* ptr, std::size_t bytes) const {
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(ptr) - user_;
  std::lock_guard lock(mutex_);
  auto it = live_.upper_bound(offset);
  if (it == live_.begin() || offset >= std::prev(it)->first + std::prev(it)->second.bytes)
    throw Error("an illegal memory access was encountered (CUDA error 700): a kernel on " + name_ +
                " was given address 0x" + [&] {
                  char b[20];
                  std::snprintf(b, sizeof b, "%zx", reinterpret_cast<std::uintptr_t>(ptr));
                  return std::string(b);
                }() + ", which is in no live allocation (freed, or never allocated)");
  --it;
  if (offset + bytes > it->first + it->second.bytes)
    throw Error("an illegal memory access was encountered (CUDA error 700): a kernel on " + name_ + " reads " +
                std::to_string(bytes) + " bytes from an allocation of " + std::to_string(it->second.bytes) +
                " bytes, past its end");
  return {it->first, it->second.generation};
}

bool DeviceMemory::usable_by(const BlockTag& t, StreamPoint work) const {
  std::vector<StreamPoint> free_after;
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(t.offset);
    if (it != live_.end() && it->second.generation == t.generation) return true;
    auto r = retired_.find(t.generation);
    if (r == retired_.end()) return false;
    free_after = r->second;
  }
  return std::any_of(free_after.begin(), free_after.end(),
                     [&](const StreamPoint& p) { return streams_.ordered_before(work, p); });
}

std::string DeviceMemory::out_of_memory_message(std::size_t requested) const {
  std::vector<std::pair<std::size_t, std::size_t>> largest;  // (bytes, record)
  for (auto& [o, l] : live_) largest.emplace_back(l.bytes, l.record);
  std::sort(largest.rbegin(), largest.rend());
  std::size_t waiting = quarantined_;
  for (const Pending& p : pending_) waiting += p.bytes;
  std::string m = name_ + " is out of memory (CUDA error 2): tried to allocate " + bytes_text(requested) + "; " +
                  bytes_text(capacity_) + " total (GDRT_EMU_MEMORY), " + bytes_text(live_bytes_) + " in " +
                  std::to_string(live_.size()) + " live allocations, " + bytes_text(waiting) +
                  " freed but still in use by queued work. Largest live allocations:";
  for (std::size_t i = 0; i < largest.size() && i < 5; ++i) {
    m += "\n  " + bytes_text(largest[i].first);
    if (largest[i].second < record_slots_) {
      const Record& r = records_[largest[i].second];
      // Frame 0 is new_record's caller chain inside gdrt; name the first few.
      char** names = backtrace_symbols(r.stack, r.frames);
      if (names) {
        for (int f = 3; f < r.frames && f < 7; ++f) m += std::string("\n      at ") + names[f];
        std::free(names);
      }
    }
  }
  m += "\nFree tensors you no longer need (drop references, detach stored losses), reduce the batch size, or raise "
       "GDRT_EMU_MEMORY.";
  return m;
}

}  // namespace gdrt::emu
