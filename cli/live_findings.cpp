#include "live_findings.h"

#include <deque>
#include <unordered_map>

#include <fmt/format.h>

#include "chunk_payloads.h"
#include "event_codec.h"
#include "gdtrace_format.h"
#include "gpudiag/api_kinds.h"
#include "gpudiag/catalogue.h"
#include "gpudiag/detect/detect.h"

namespace gpudiag::cli {

using gdtrace::ChunkHeader;
using gdtrace::ChunkType;
using gdtrace::load;
using gdtrace::RawEvent;

void GdtraceTail::append(std::string_view bytes) {
  if (stopped_) return;
  buffer_.erase(0, pos_);  // the chunks before pos_ were handed out before this call
  pos_ = 0;
  buffer_.append(bytes);
}

bool GdtraceTail::next(Chunk& chunk) {
  if (stopped_) return false;
  if (!header_read_) {
    if (buffer_.size() < sizeof(gdtrace::FileHeader)) {
      stopped_ = buffer_.size() >= 8 && buffer_.compare(0, 8, gdtrace::kMagic, 8) != 0;
      return false;
    }
    const auto h = load<gdtrace::FileHeader>(buffer_.data());
    if (std::memcmp(h.magic, gdtrace::kMagic, 8) != 0 || h.version == 0 || h.version > gdtrace::kVersion ||
        h.header_size < sizeof h) {
      stopped_ = true;
      return false;
    }
    if (buffer_.size() < h.header_size) return false;
    header_read_ = true;
    pid_ = static_cast<std::int64_t>(h.pid);
    pos_ = h.header_size;
  }
  if (buffer_.size() - pos_ < sizeof(ChunkHeader)) return false;
  const auto h = load<ChunkHeader>(buffer_.data() + pos_);
  if (h.tag != gdtrace::kChunkTag || h.length > gdtrace::kMaxChunk) {
    stopped_ = true;
    return false;
  }
  if (buffer_.size() - pos_ - sizeof h < h.length) return false;
  const char* payload = buffer_.data() + pos_ + sizeof h;
  if (gdtrace::checksum(payload, h.length) != h.crc) {
    stopped_ = true;
    return false;
  }
  chunk = {h.type, std::string_view(payload, h.length)};
  pos_ += sizeof h + h.length;
  return true;
}

namespace {

constexpr std::size_t kFreedKept = 1 << 16;     // freed blocks remembered, the newest
constexpr std::size_t kLaunchesKept = 1 << 12;  // launch calls remembered, for their kernels' names

// The codec's ids left as the file's: strings and stacks are looked up in
// the process's own tables.
struct FileIds {
  StringId string(std::uint32_t id) const { return id; }
  StackId stack(std::uint32_t id) const { return id; }
};

struct Block {
  std::uint64_t bytes = 0;
  bool live = true;
  std::uint64_t free_ns = 0;
};

struct ModuleRecord {
  std::string path;
  std::uint64_t base, low, size;
};

}  // namespace

struct LiveFindings::Process {
  std::unordered_map<std::uint32_t, std::string> strings;
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> stacks;
  std::vector<ModuleRecord> modules;
  std::unordered_map<std::int32_t, std::string> device_names;
  std::unordered_map<std::uint32_t, std::string> located;  // stack id -> where, once symbolized
  std::map<std::pair<bool, std::vector<std::uint64_t>>, std::string> located_faults;  // frames -> where
  // Allocations, frees, kernel arguments and launch calls, by time, until
  // a Drained marker says nothing earlier can still come.
  std::multimap<std::uint64_t, RawEvent> pending;
  std::map<std::uint64_t, Block> blocks;                           // by address
  std::deque<std::pair<std::uint64_t, std::uint64_t>> freed_order;  // address, free time: oldest first
  std::unordered_map<std::uint64_t, std::uint32_t> launch_symbols;  // correlation -> kernel name string
  std::deque<std::uint64_t> launch_order;
  gdtrace::Inflater inflater;
  std::vector<char> inflated;

  std::string str(std::uint32_t id) const {
    const auto it = strings.find(id);
    return it == strings.end() ? std::string() : it->second;
  }

  std::string device_label(std::int32_t device) const {
    if (device == kHostDevice) return "the host (pinned memory)";
    const auto it = device_names.find(device);
    return it == device_names.end() || it->second.empty() ? fmt::format("device {}", device)
                                                          : fmt::format("device {} ({})", device, it->second);
  }

  // A Trace holding one stack, with the modules its frames are in, symbolized.
  Trace trace_of(const std::vector<std::uint64_t>& frames, bool starts_at_fault) const {
    Trace t;
    for (const ModuleRecord& m : modules)
      t.modules.push_back({.path = t.intern(m.path), .base = m.base, .size = m.size, .low = m.low});
    Stack s;
    s.starts_at_fault = starts_at_fault;
    for (const std::uint64_t ip : frames) {
      StackFrame f{.ip = ip};
      for (std::size_t m = 0; m < modules.size(); ++m)
        if (ip >= modules[m].low && ip - modules[m].low < modules[m].size) {
          f.module = static_cast<std::int32_t>(m);
          break;
        }
      s.frames.push_back(f);
    }
    t.add_stack(std::move(s));
    symbolize(t);
    return t;
  }

  // Where the program was, as the terminal report names a finding's frame;
  // "" when the stack is not known.
  std::string locate(const std::vector<std::uint64_t>& frames, bool starts_at_fault) const {
    if (frames.empty()) return {};
    const Trace t = trace_of(frames, starts_at_fault);
    const std::vector<Frame> shown = frames_of(t, 1);
    return shown.empty() ? std::string() : frame_text(shown.front());
  }

  // Each stack is symbolized once: a fault the copy guard catches may come
  // back every step, and a call site fails again.
  const std::string& where(const std::vector<std::uint64_t>& frames, bool starts_at_fault) {
    const auto [it, fresh] = located_faults.try_emplace({starts_at_fault, frames});
    if (fresh) it->second = locate(frames, starts_at_fault);
    return it->second;
  }

  const std::string& where(std::uint32_t stack) {
    const auto [it, fresh] = located.try_emplace(stack);
    if (fresh) {
      const auto s = stacks.find(stack);
      if (s != stacks.end()) it->second = locate(s->second, false);
    }
    return it->second;
  }
};

LiveFindings::LiveFindings() = default;
LiveFindings::~LiveFindings() = default;

namespace {

std::string line_of(std::string_view rule_name, const std::string& message, const std::string& where) {
  const Rule& rule = rule_named(rule_name);
  return fmt::format("gpudiag: {}: {}{}", rule_tag(rule), message, where.empty() ? "" : " at " + where);
}

std::string key_of(std::string_view rule_name, const std::string& where) {
  return fmt::format("{}|{}", rule_name, where);
}

}  // namespace

void LiveFindings::say(std::string key, std::string line, std::vector<std::string>& lines) {
  if (said_.insert(std::move(key)).second) lines.push_back(std::move(line));
}

std::vector<std::string> LiveFindings::chunk(std::int64_t pid, std::uint16_t type, std::string_view payload) {
  std::unique_ptr<Process>& slot = processes_[pid];
  if (!slot) slot = std::make_unique<Process>();
  Process& p = *slot;
  std::vector<std::string> lines;
  const char* data = payload.data();
  const auto n = static_cast<std::uint32_t>(payload.size());

  // `in_order`: the event is one of all the thread's events, not a sample.
  const auto event = [&](const RawEvent& e, bool in_order) {
    switch (static_cast<EventKind>(e.kind)) {
      case EventKind::Alloc:
      case EventKind::Free:
      case EventKind::KernelArg:
        if (in_order) p.pending.emplace(e.t0, e);
        break;
      case EventKind::Device: {
        const auto d = gdtrace::decode<DeviceDesc>(e, FileIds{});
        p.device_names[d.id] = p.str(d.name);
        break;
      }
      case EventKind::OutOfMemory: {
        const auto o = gdtrace::decode<OutOfMemory>(e, FileIds{});
        std::string message = fmt::format("out of memory on {}: a request for {} failed", p.device_label(o.device),
                                          format_bytes(o.requested_bytes));
        if (o.capacity_bytes != 0)
          message += fmt::format(" with {} free of {}", format_bytes(o.free_bytes), format_bytes(o.capacity_bytes));
        const std::string& where = p.where(o.stack);
        say(key_of("out-of-memory", where), line_of("out-of-memory", message, where), lines);
        break;
      }
      case EventKind::Api: {
        const auto a = gdtrace::decode<ApiCall>(e, FileIds{});
        const std::string name = p.str(a.name);
        if (a.symbol != 0 && in_order) p.pending.emplace(e.t0, e);  // names the kernel its arguments go to
        if (a.status == 0 || a.status == kCudaNotReady || reports_earlier_error(name)) break;
        const std::string& where = p.where(a.stack);
        if (a.status == kCudaOutOfMemory && is_allocation_call(name)) {
          say(key_of("out-of-memory", where),
              line_of("out-of-memory", fmt::format("{} returned error {}", name, cuda_error_text(a.status)), where),
              lines);
          break;
        }
        const std::string what = a.symbol != 0 ? fmt::format("the launch of {}", demangle(p.str(a.symbol))) : name;
        say(key_of("unchecked-cuda-error", where),
            line_of("unchecked-cuda-error", fmt::format("{} returned error {}", what, cuda_error_text(a.status)), where),
            lines);
        break;
      }
      default: break;
    }
  };

  switch (static_cast<ChunkType>(type)) {
    case ChunkType::Events:
    case ChunkType::DeflatedEvents: {
      gdtrace::EventRecords records;
      if (!gdtrace::read_event_records(static_cast<ChunkType>(type), data, n, p.inflater, p.inflated, records)) break;
      for (std::size_t i = 0; i < records.count; ++i) event(records[i], true);
      break;
    }
    case ChunkType::Retained: {
      // What the recorder kept of a segment it dropped, which the watch may
      // never have read: its out-of-memory and failed calls are said (once,
      // as always); its allocations, frees and kernel arguments are a
      // sample of the dropped part, which orders nothing.
      gdtrace::EventRecords records;
      std::uint32_t seq = 0;
      if (!gdtrace::read_retained_records(data, n, p.inflater, p.inflated, seq, records)) break;
      for (std::size_t i = 0; i < records.count; ++i) event(records[i], false);
      break;
    }
    case ChunkType::String:
      if (n >= 4) p.strings[load<std::uint32_t>(data)] = std::string(payload.substr(4));
      break;
    case ChunkType::Stack: {
      if (n < 8) break;
      const auto count = load<std::uint32_t>(data + 4);
      if (std::uint64_t{count} * 8 + 8 != n) break;
      std::vector<std::uint64_t> frames(count);
      for (std::uint32_t i = 0; i < count; ++i) frames[i] = load<std::uint64_t>(data + 8 + std::size_t{i} * 8);
      p.stacks[load<std::uint32_t>(data)] = std::move(frames);
      break;
    }
    case ChunkType::Module:
      if (n >= 24)
        p.modules.push_back({std::string(payload.substr(24)), load<std::uint64_t>(data), load<std::uint64_t>(data + 8),
                             load<std::uint64_t>(data + 16)});
      break;
    case ChunkType::Drained:
      if (n == 8) judge(p, load<std::uint64_t>(data), lines);
      break;
    case ChunkType::GuardedAccess: {
      gdtrace::GuardedAccessPayload g;
      if (!gdtrace::read_guarded_access(data, n, g)) break;
      const std::string& where = p.where(g.frames, (g.flags & gdtrace::kCrashStartsAtFault) != 0);
      say(key_of("unsynced-transfer", where),
          line_of("unsynced-transfer",
                  fmt::format("host {} at 0x{:x} of the destination of an asynchronous device-to-host copy before "
                              "a synchronisation covered the copy",
                              g.write() ? "write" : "read", g.address),
                  where),
          lines);
      break;
    }
    case ChunkType::Crash: {
      gdtrace::CrashPayload c;
      if (!gdtrace::read_crash(data, n, c)) break;
      const Trace t = p.trace_of(c.frames, (c.flags & gdtrace::kCrashStartsAtFault) != 0);
      const std::string text = describe_crash(
          t, {.time_ns = c.time_ns, .signal = c.signal, .code = c.code, .address = c.address, .tid = c.tid,
              .stack = c.frames.empty() ? kNoStack : StackId{1}});
      say(fmt::format("crash|{}|{}", pid, text), "gpudiag: " + text, lines);
      break;
    }
    default: break;
  }
  return lines;
}

// Allocations, frees and kernel arguments before `until`, in time order.
void LiveFindings::judge(Process& p, std::uint64_t until, std::vector<std::string>& lines) {
  const auto end = p.pending.lower_bound(until);
  for (auto it = p.pending.begin(); it != end; ++it) {
    const RawEvent& e = it->second;
    switch (static_cast<EventKind>(e.kind)) {
      case EventKind::Alloc: {
        const auto a = gdtrace::decode<Alloc>(e, FileIds{});
        // What it covers is in use again: a pointer into it is no longer into freed memory.
        auto b = p.blocks.lower_bound(a.addr);
        if (b != p.blocks.begin() && std::prev(b)->first + std::prev(b)->second.bytes > a.addr) --b;
        while (b != p.blocks.end() && b->first < a.addr + std::max<std::uint64_t>(a.bytes, 1)) b = p.blocks.erase(b);
        p.blocks[a.addr] = {.bytes = a.bytes};
        break;
      }
      case EventKind::Free: {
        const auto f = gdtrace::decode<Free>(e, FileIds{});
        auto b = p.blocks.find(f.addr);
        if (b == p.blocks.end()) {
          if (f.bytes == 0) break;  // neither its allocation nor its size is known
          b = p.blocks.emplace(f.addr, Block{.bytes = f.bytes}).first;
        }
        b->second.live = false;
        b->second.free_ns = f.time_ns;
        p.freed_order.emplace_back(f.addr, f.time_ns);
        if (p.freed_order.size() > kFreedKept) {
          const auto [addr, time] = p.freed_order.front();
          p.freed_order.pop_front();
          if (const auto old = p.blocks.find(addr);
              old != p.blocks.end() && !old->second.live && old->second.free_ns == time)
            p.blocks.erase(old);
        }
        break;
      }
      case EventKind::Api: {
        const auto a = gdtrace::decode<ApiCall>(e, FileIds{});
        if (a.correlation == 0 || !p.launch_symbols.emplace(a.correlation, a.symbol).second) break;
        p.launch_order.push_back(a.correlation);
        if (p.launch_order.size() > kLaunchesKept) {
          p.launch_symbols.erase(p.launch_order.front());
          p.launch_order.pop_front();
        }
        break;
      }
      case EventKind::KernelArg: {
        const auto a = gdtrace::decode<KernelArg>(e, FileIds{});
        if (!is_gpu_pointer(a)) break;
        auto b = p.blocks.upper_bound(a.value);
        if (b == p.blocks.begin()) break;
        --b;
        if (b->second.live || a.value >= b->first + b->second.bytes || b->second.free_ns > a.time_ns) break;
        const auto symbol = p.launch_symbols.find(a.correlation);
        const std::string kernel = symbol != p.launch_symbols.end() && symbol->second != 0
                                       ? demangle(p.str(symbol->second))
                                       : std::string("a kernel");
        const std::string& where = p.where(a.stack);
        say(key_of("premature-free", where),
            line_of("premature-free",
                    fmt::format("{} was given as parameter {} the address 0x{:x}, inside {} at 0x{:x} that was freed "
                                "{} earlier",
                                kernel, a.index, a.value, format_bytes(b->second.bytes), b->first,
                                format_duration(a.time_ns - b->second.free_ns)),
                    where),
            lines);
        break;
      }
      default: break;
    }
  }
  p.pending.erase(p.pending.begin(), end);
}

std::vector<std::string> LiveFindings::finish() {
  std::vector<std::string> lines;
  for (auto& [pid, process] : processes_) judge(*process, ~std::uint64_t{0}, lines);
  return lines;
}

}  // namespace gpudiag::cli
