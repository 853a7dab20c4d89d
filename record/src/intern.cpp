// Strings, stacks and loaded modules: interned once, and their definition is
// written to the trace at once (one chunk per definition), so any event that
// refers to them can be resolved even if the process dies right after.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "gpudiag/descriptors.h"
#include "recorder_state.h"

namespace gpudiag::rec {
namespace detail {
namespace {

struct ModuleRange {
  std::uint64_t low, high;
};

struct Interning {
  std::mutex mutex;
  // Node-based: a key's address is stable, so the per-thread cache in
  // intern() may point at it. Tables of an earlier recording are retired,
  // not freed, for the same reason.
  std::unordered_map<std::string, StringId> strings;
  std::vector<std::unordered_map<std::string, StringId>*> retired_strings;
  std::map<std::vector<std::uint64_t>, StackId> stacks;
  std::vector<std::map<std::vector<std::uint64_t>, StackId>*> retired_stacks;
  std::vector<ModuleRange> modules;
  std::uint64_t generation = 0;
};

Interning& interning() {
  static auto* state = new Interning();  // never destroyed: used from atexit
  return *state;
}

// Must hold the interning mutex. Re-reads the loaded modules and writes the
// ones not yet in the trace.
void record_modules(Recorder& r, Interning& in) {
  struct Context {
    Recorder* r;
    Interning* in;
  } ctx{&r, &in};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* c = static_cast<Context*>(data);
        std::uint64_t low = UINT64_MAX, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          low = std::min<std::uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
          high = std::max<std::uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (low >= high) return 0;
        for (const auto& m : c->in->modules)
          if (m.low == low) return 0;
        c->in->modules.push_back({low, high});
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty()) {  // the executable itself
          char exe[4096];
          ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
          if (n > 0) path.assign(exe, static_cast<std::size_t>(n));
        }
        std::string payload(24, '\0');
        const std::uint64_t words[3] = {static_cast<std::uint64_t>(info->dlpi_addr), low, high - low};
        std::memcpy(payload.data(), words, sizeof words);
        payload += path;
        write_small_chunk(c->r->fd, gdtrace::ChunkType::Module, payload.data(), static_cast<std::uint32_t>(payload.size()));
        return 0;
      },
      &ctx);
}

bool in_known_module(const Interning& in, std::uint64_t ip) {
  for (const auto& m : in.modules)
    if (ip >= m.low && ip < m.high) return true;
  return false;
}

Interning& current(Recorder& r) {
  Interning& in = interning();
  if (in.generation != r.generation) {
    if (!in.strings.empty()) in.retired_strings.push_back(new std::unordered_map<std::string, StringId>(std::move(in.strings)));
    in.strings = {};
    if (!in.stacks.empty()) in.retired_stacks.push_back(new std::map<std::vector<std::uint64_t>, StackId>(std::move(in.stacks)));
    in.stacks = {};
    in.modules.clear();
    in.generation = r.generation;
  }
  return in;
}

// The last strings this thread interned, by the address and length of the
// caller's text (kernel and API names are usually literals): a hit costs a
// hash and a compare, no lock and no std::string. Entries are verified
// against the interned text, so a reused address with other text misses.
struct CachedString {
  const char* data = nullptr;
  std::size_t size = 0;
  std::uint64_t generation = 0;
  const std::string* text = nullptr;
  StringId id = 0;
};
// Slots of each per-thread cache; a slot is picked by a hash's top bits.
constexpr int kCacheBits = 6;
constexpr std::size_t kCacheSlots = std::size_t{1} << kCacheBits;
thread_local CachedString t_strings[kCacheSlots];

CachedString& cache_slot(std::string_view text) {
  auto h = reinterpret_cast<std::uintptr_t>(text.data()) ^ (text.size() * 0x9E3779B97F4A7C15ull);
  h ^= h >> 17;
  return t_strings[(h * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
}

// The same for stacks, by a hash of their return addresses: a training loop
// allocates from the same few call sites over and over.
struct CachedStack {
  std::uint64_t hash = 0;
  std::uint64_t generation = 0;
  const std::vector<std::uint64_t>* frames = nullptr;
  StackId id = 0;
};
thread_local CachedStack t_stacks[kCacheSlots];

std::uint64_t hash_frames(void* const* ips, int n) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    h ^= reinterpret_cast<std::uintptr_t>(ips[i]);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

bool same_frames(const std::vector<std::uint64_t>& frames, void* const* ips, int n) {
  if (frames.size() != static_cast<std::size_t>(n)) return false;
  for (int i = 0; i < n; ++i)
    if (frames[static_cast<std::size_t>(i)] != reinterpret_cast<std::uintptr_t>(ips[i])) return false;
  return true;
}

}  // namespace

void interning_before_fork() noexcept { interning().mutex.lock(); }
void interning_after_fork_in_parent() noexcept { interning().mutex.unlock(); }
void interning_after_fork_in_child() noexcept { new (&interning().mutex) std::mutex(); }

void write_loaded_modules(Recorder& r) noexcept {
  try {
    Interning& in = interning();
    std::lock_guard<std::mutex> lock(in.mutex);
    record_modules(r, current(r));
  } catch (...) {
  }
}

void write_process_info(Recorder& r) noexcept {
  try {
    // Read beside the program's own descriptors, as the trace file is.
    std::string cmdline;
    if (const int fd = open_above_stdio("/proc/self/cmdline", O_RDONLY); fd >= 0) {
      char chunk[4096];
      for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        cmdline.append(chunk, static_cast<std::size_t>(n));
      }
      ::close(fd);
    }
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    std::string payload(16, '\0');
    const std::int64_t ids[2] = {static_cast<std::int64_t>(getpid()), static_cast<std::int64_t>(getppid())};
    std::memcpy(payload.data(), ids, sizeof ids);
    payload += cmdline;
    write_small_chunk(r.fd, gdtrace::ChunkType::Process, payload.data(), static_cast<std::uint32_t>(payload.size()));
  } catch (...) {
  }
}

}  // namespace detail

using namespace detail;

StringId intern(std::string_view text) noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr) return 0;
  if (text.empty()) return 0;
  CachedString& slot = cache_slot(text);
  if (slot.data == text.data() && slot.size == text.size() && slot.generation == r->generation &&
      std::string_view(*slot.text) == text)
    return slot.id;
  try {
    Interning& in = interning();
    std::lock_guard<std::mutex> lock(in.mutex);
    Interning& cur = current(*r);
    std::string key(text);
    auto it = cur.strings.find(key);
    if (it == cur.strings.end()) {
      const StringId id = static_cast<StringId>(cur.strings.size() + 1);
      std::string payload(4, '\0');
      std::memcpy(payload.data(), &id, 4);
      payload += key;
      write_small_chunk(r->fd, gdtrace::ChunkType::String, payload.data(), static_cast<std::uint32_t>(payload.size()));
      it = cur.strings.emplace(std::move(key), id).first;
    }
    slot = {text.data(), text.size(), cur.generation, &it->first, it->second};
    return it->second;
  } catch (...) {
    return 0;
  }
}

bool stacks_enabled() noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  return r != nullptr && r->options.stacks;
}

StackId capture_stack(int skip) noexcept {
  Recorder* r = g_recorder.load(std::memory_order_acquire);
  if (r == nullptr || !r->options.stacks) return 0;
  constexpr int kMaxFrames = 64;
  void* ips[kMaxFrames];
  int n = unw_backtrace(ips, kMaxFrames);
  const int first = 1 + (skip > 0 ? skip : 0);  // drop capture_stack itself
  if (n <= first) return 0;
  const std::uint64_t hash = hash_frames(ips + first, n - first);
  CachedStack& slot = t_stacks[hash >> (64 - kCacheBits)];
  if (slot.hash == hash && slot.generation == r->generation && same_frames(*slot.frames, ips + first, n - first))
    return slot.id;
  try {
    std::vector<std::uint64_t> frames;
    frames.reserve(static_cast<std::size_t>(n - first));
    for (int i = first; i < n; ++i) frames.push_back(reinterpret_cast<std::uint64_t>(ips[i]));
    Interning& in = interning();
    std::lock_guard<std::mutex> lock(in.mutex);
    Interning& cur = current(*r);
    auto it = cur.stacks.find(frames);
    if (it != cur.stacks.end()) {
      slot = {hash, cur.generation, &it->first, it->second};
      return it->second;
    }
    for (std::uint64_t ip : frames) {
      if (!in_known_module(cur, ip)) {
        record_modules(*r, cur);
        break;
      }
    }
    const StackId id = static_cast<StackId>(cur.stacks.size() + 1);
    std::string payload(8 + frames.size() * 8, '\0');
    const std::uint32_t head[2] = {id, static_cast<std::uint32_t>(frames.size())};
    std::memcpy(payload.data(), head, sizeof head);
    std::memcpy(payload.data() + 8, frames.data(), frames.size() * 8);
    write_small_chunk(r->fd, gdtrace::ChunkType::Stack, payload.data(), static_cast<std::uint32_t>(payload.size()));
    it = cur.stacks.emplace(std::move(frames), id).first;
    slot = {hash, cur.generation, &it->first, id};
    return id;
  } catch (...) {
    return 0;
  }
}

}  // namespace gpudiag::rec
