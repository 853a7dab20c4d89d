#include "pickle_reader.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "gpudiag/trace.h"
#include "gpudiag/trace_io.h"

namespace gpudiag::import::pickle {
namespace {

// Nesting deeper than any snapshot has: a hostile pickle cannot exhaust the stack this way (it has none).
constexpr std::size_t kMaxMarks = 1 << 16;
// A protocol-0 line (an INT, a memo key) longer than this is no such line.
constexpr std::size_t kMaxLine = 1 << 10;

}  // namespace


void Reader::fail(std::size_t at, const std::string& why) const {
  throw TraceError(name_ + ": pickle byte " + std::to_string(at) + ": " + why);
}

Value Reader::new_container(Value::Kind kind) {
  Value v;
  v.kind = kind;
  if (!free_containers_.empty()) {
    v.index = free_containers_.back();
    free_containers_.pop_back();
    return v;
  }
  if (containers_.size() >= UINT32_MAX) throw TraceError(name_ + ": more containers than a snapshot has");
  v.index = static_cast<std::uint32_t>(containers_.size());
  containers_.emplace_back();
  return v;
}

Value Reader::new_string(std::string_view s) {
  Value v;
  v.kind = Value::Kind::String;
  v.index = static_cast<std::uint32_t>(strings_.size());
  strings_.emplace_back(s);
  return v;
}

Value Reader::get(const Value& dict, std::string_view key) const {
  if (dict.kind != Value::Kind::Dict) return {};
  const auto& kv = containers_[dict.index].items;
  for (std::size_t i = 0; i + 1 < kv.size(); i += 2)
    if (kv[i].kind == Value::Kind::String && strings_[kv[i].index] == key) return kv[i + 1];
  return {};
}

std::int64_t Reader::as_int(const Value& v, std::int64_t otherwise) const {
  if (v.kind == Value::Kind::Int) return v.unsigned_int ? static_cast<std::int64_t>(v.u) : v.i;
  if (v.kind == Value::Kind::Bool) return v.i;
  return otherwise;
}

std::uint64_t Reader::as_u64(const Value& v, std::uint64_t otherwise) const {
  if (v.kind == Value::Kind::Int) return v.unsigned_int ? v.u : static_cast<std::uint64_t>(v.i);
  return otherwise;
}

std::string_view Reader::as_string(const Value& v) const {
  return v.kind == Value::Kind::String ? std::string_view(strings_[v.index]) : std::string_view();
}

void Reader::release(Value& v) {
  if (v.is_container()) {
    Container& c = containers_[v.index];
    // A small one keeps its room for the next entry that takes its place.
    if (c.items.capacity() <= 32) c.items.clear();
    else std::vector<Value>().swap(c.items);
    if (c.memo_key != kNotInMemo) memo_.release(c.memo_key);
    c.memo_key = kNotInMemo;
    free_containers_.push_back(v.index);
  }
  v.kind = Value::Kind::Released;
}

Value Reader::read(std::string_view bytes, const OnAppend& on_append) {
  Input input(bytes);
  return read(input, on_append);
}

Value Reader::read_file(const std::string& path, const OnAppend& on_append) {
  Input input(path);
  return read(input, on_append);
}

Value Reader::read(Input& input, const OnAppend& on_append) {
  std::vector<Value> stack;
  std::vector<std::size_t> marks;
  std::unordered_map<std::string_view, std::uint32_t> short_strings;  // one copy of each repeated key and name
  const auto need = [&](std::size_t n) -> const char* {
    const std::size_t at = input.offset();
    const char* p = input.need(n);
    if (p == nullptr) fail(at, "the pickle ends early (it is cut short)");
    return p;
  };
  const auto le = [&](std::size_t n) {
    const char* p = need(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return v;
  };
  const auto line = [&] {
    const std::size_t at = input.offset();
    const auto s = input.line(kMaxLine);
    if (!s) fail(at, "a line that does not end (cut short, or too long)");
    return std::string(*s);  // the input's buffer moves on
  };
  const auto pop = [&](std::size_t at) {
    if (stack.empty() || (!marks.empty() && stack.size() == marks.back())) fail(at, "pops from an empty stack");
    Value v = stack.back();
    stack.pop_back();
    return v;
  };
  const auto pop_mark = [&](std::size_t at) {
    if (marks.empty()) fail(at, "no mark to pop to");
    const std::size_t m = marks.back();
    marks.pop_back();
    return m;
  };
  const auto top = [&](std::size_t at) -> Value& {
    if (stack.empty() || (!marks.empty() && stack.size() == marks.back())) fail(at, "needs a value on the stack");
    return stack.back();
  };
  const auto string_value = [&](std::string_view s) {
    if (s.size() <= 64) {
      if (auto it = short_strings.find(s); it != short_strings.end()) {
        Value v;
        v.kind = Value::Kind::String;
        v.index = it->second;
        return v;
      }
      const Value v = new_string(s);
      short_strings.emplace(strings_[v.index], v.index);
      return v;
    }
    return new_string(s);
  };
  const auto bytes_value = [&](std::string_view s) {
    Value v = new_string(s);
    v.kind = Value::Kind::Bytes;
    return v;
  };
  const auto int_value = [&](std::int64_t i) {
    Value v;
    v.kind = Value::Kind::Int;
    v.i = i;
    return v;
  };
  const auto long_value = [&](std::size_t at, std::size_t n) {
    const char* p = need(n);
    Value v;
    v.kind = Value::Kind::Int;
    if (n == 0) return v;
    const bool negative = (static_cast<unsigned char>(p[n - 1]) & 0x80) != 0;
    // Two's complement, little-endian: as many bytes as fit in 64 bits, and
    // the rest only sign (or a 0 byte above an unsigned 64-bit value).
    std::size_t used = n;
    while (used > 8 && static_cast<unsigned char>(p[used - 1]) == (negative ? 0xff : 0x00)) --used;
    if (used > 8) fail(at, "an integer wider than 64 bits");
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < used; ++i) u |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    if (negative && used < 8) u |= ~std::uint64_t{0} << (8 * used);
    if (!negative && (u >> 63) != 0) {
      v.unsigned_int = true;
      v.u = u;
    } else {
      v.i = static_cast<std::int64_t>(u);
    }
    return v;
  };
  const auto to_container = [&](std::size_t at, const Value& v, Value::Kind kind, const char* what) -> std::vector<Value>& {
    if (v.kind != kind) fail(at, std::string(what) + " on a value that is not one");
    return containers_[v.index].items;
  };
  // Items appended to a list, after the caller has seen them (and released some).
  const auto append_to = [&](std::size_t at, Value& list, std::span<Value> items) {
    if (list.kind == Value::Kind::Released) fail(at, "appends to a list already consumed");
    auto& to = to_container(at, list, Value::Kind::List, "append");
    if (on_append) on_append(list.index, items);
    for (const Value& v : items)
      if (v.kind != Value::Kind::Released) to.push_back(v);
  };
  const auto memo_put = [&](std::uint64_t key, std::size_t at) {
    const Value& v = top(at);
    memo_.put(key, v);
    if (v.is_container()) containers_[v.index].memo_key = key;
  };
  const auto memo_get = [&](std::uint64_t key, std::size_t at) {
    const Value* v = memo_.get(key);
    if (v == nullptr) fail(at, "refers to memo entry " + std::to_string(key) + ", which was never stored");
    if (v->kind == Value::Kind::Released)
      fail(at, "refers again to a value already consumed and released (a trace entry shared by two lists)");
    stack.push_back(*v);
  };

  while (true) {
    const std::size_t at = input.offset();
    const auto op = static_cast<unsigned char>(*need(1));
    switch (op) {
      case 0x80: need(1); break;  // PROTO
      case 0x95: need(8); break;  // FRAME: a hint for buffering, nothing to build
      case '.': {                 // STOP
        Value v = pop(at);
        if (!stack.empty() || !marks.empty()) fail(at, "stops with values left on the stack");
        return v;
      }
      case '(':  // MARK
        if (marks.size() >= kMaxMarks) fail(at, "nested too deep");
        marks.push_back(stack.size());
        break;
      case '0': pop(at); break;  // POP
      case '1': stack.resize(pop_mark(at)); break;  // POP_MARK
      case '2': stack.push_back(top(at)); break;    // DUP
      case 'N': stack.push_back({}); break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Value v;
        v.kind = Value::Kind::Bool;
        v.i = op == 0x88;
        stack.push_back(v);
        break;
      }
      case 'J': stack.push_back(int_value(static_cast<std::int32_t>(le(4)))); break;  // BININT
      case 'K': stack.push_back(int_value(static_cast<std::int64_t>(le(1)))); break;  // BININT1
      case 'M': stack.push_back(int_value(static_cast<std::int64_t>(le(2)))); break;  // BININT2
      case 0x8a: stack.push_back(long_value(at, le(1))); break;  // LONG1
      case 0x8b: {                                                // LONG4
        const std::uint64_t n = le(4);
        if (n > input.left()) fail(at, "the pickle ends early (it is cut short)");
        stack.push_back(long_value(at, n));
        break;
      }
      case 'I': {  // INT, protocol 0: a decimal line, or 00/01 for a bool
        const std::string s = line();
        if (s == "00" || s == "01") {
          Value v;
          v.kind = Value::Kind::Bool;
          v.i = s == "01";
          stack.push_back(v);
          break;
        }
        try {
          stack.push_back(int_value(std::stoll(s)));
        } catch (const std::exception&) {
          fail(at, "an INT that is not a decimal integer");
        }
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        std::uint64_t u = 0;
        const char* p = need(8);
        for (int i = 0; i < 8; ++i) u = u << 8 | static_cast<unsigned char>(p[i]);
        Value v;
        v.kind = Value::Kind::Float;
        v.f = std::bit_cast<double>(u);
        stack.push_back(v);
        break;
      }
      case 'X':     // BINUNICODE
      case 0x8c:    // SHORT_BINUNICODE
      case 0x8d:    // BINUNICODE8
      case 'T':     // BINSTRING (Python 2's)
      case 'U': {   // SHORT_BINSTRING
        const std::size_t width = op == 0x8c || op == 'U' ? 1 : op == 0x8d ? 8 : 4;
        const std::uint64_t n = le(width);
        if (n > input.left()) fail(at, "the pickle ends early (it is cut short)");
        stack.push_back(string_value(std::string_view(need(n), n)));
        break;
      }
      case 'B':     // BINBYTES
      case 'C':     // SHORT_BINBYTES
      case 0x8e:    // BINBYTES8
      case 0x96: {  // BYTEARRAY8
        const std::size_t width = op == 'C' ? 1 : op == 'B' ? 4 : 8;
        const std::uint64_t n = le(width);
        if (n > input.left()) fail(at, "the pickle ends early (it is cut short)");
        stack.push_back(bytes_value(std::string_view(need(n), n)));
        break;
      }
      case '}': stack.push_back(new_container(Value::Kind::Dict)); break;   // EMPTY_DICT
      case ']': stack.push_back(new_container(Value::Kind::List)); break;   // EMPTY_LIST
      case ')': stack.push_back(new_container(Value::Kind::Tuple)); break;  // EMPTY_TUPLE
      case 0x8f: stack.push_back(new_container(Value::Kind::Set)); break;   // EMPTY_SET
      case 'd':                                                              // DICT
      case 'l':                                                              // LIST
      case 't':                                                              // TUPLE
      case 0x91: {                                                           // FROZENSET
        const std::size_t m = pop_mark(at);
        if (op == 'd' && (stack.size() - m) % 2 != 0) fail(at, "a dict of an odd number of items");
        Value c = new_container(op == 'd' ? Value::Kind::Dict : op == 'l' ? Value::Kind::List
                                           : op == 't' ? Value::Kind::Tuple : Value::Kind::Set);
        containers_[c.index].items.assign(stack.begin() + static_cast<std::ptrdiff_t>(m), stack.end());
        stack.resize(m);
        stack.push_back(c);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        const std::size_t n = op - 0x84;
        if (stack.size() < n + (marks.empty() ? 0 : marks.back())) fail(at, "a tuple of values the stack does not hold");
        Value c = new_container(Value::Kind::Tuple);
        containers_[c.index].items.assign(stack.end() - static_cast<std::ptrdiff_t>(n), stack.end());
        stack.resize(stack.size() - n);
        stack.push_back(c);
        break;
      }
      case 'a': {  // APPEND
        Value item = pop(at);
        append_to(at, top(at), std::span<Value>(&item, 1));
        break;
      }
      case 'e': {  // APPENDS
        const std::size_t m = pop_mark(at);
        if (m == 0) fail(at, "appends to nothing");
        std::vector<Value> items(stack.begin() + static_cast<std::ptrdiff_t>(m), stack.end());
        stack.resize(m);
        append_to(at, top(at), items);
        break;
      }
      case 0x90: {  // ADDITEMS
        const std::size_t m = pop_mark(at);
        if (m == 0) fail(at, "adds to nothing");
        std::vector<Value> items(stack.begin() + static_cast<std::ptrdiff_t>(m), stack.end());
        stack.resize(m);
        auto& set = to_container(at, top(at), Value::Kind::Set, "ADDITEMS");
        set.insert(set.end(), items.begin(), items.end());
        break;
      }
      case 's': {  // SETITEM
        Value value = pop(at), key = pop(at);
        auto& dict = to_container(at, top(at), Value::Kind::Dict, "SETITEM");
        dict.push_back(key), dict.push_back(value);
        break;
      }
      case 'u': {  // SETITEMS
        const std::size_t m = pop_mark(at);
        if (m == 0 || (stack.size() - m) % 2 != 0) fail(at, "SETITEMS of an odd number of items");
        std::vector<Value> items(stack.begin() + static_cast<std::ptrdiff_t>(m), stack.end());
        stack.resize(m);
        auto& dict = to_container(at, top(at), Value::Kind::Dict, "SETITEMS");
        dict.insert(dict.end(), items.begin(), items.end());
        break;
      }
      case 0x94: memo_put(memo_.size(), at); break;  // MEMOIZE
      case 'q': memo_put(le(1), at); break;         // BINPUT
      case 'r': memo_put(le(4), at); break;         // LONG_BINPUT
      case 'h': memo_get(le(1), at); break;         // BINGET
      case 'j': memo_get(le(4), at); break;         // LONG_BINGET
      case 'p':                                     // PUT, protocol 0
      case 'g': {                                   // GET
        const std::string s = line();
        std::uint64_t key = 0;
        try {
          key = std::stoull(s);
        } catch (const std::exception&) {
          fail(at, "a memo key that is not a number");
        }
        op == 'p' ? memo_put(key, at) : memo_get(key, at);
        break;
      }
      case 'c':
      case 0x93:
        fail(at, "asks to import a Python global (a class or function): refused, a data-only reader runs nothing");
      case 'R':
      case 'b':
      case 'i':
      case 'o':
      case 0x81:
      case 0x92:
        fail(at, "asks to call or build a Python object (REDUCE, BUILD, INST, OBJ, NEWOBJ): refused, a data-only "
                 "reader runs nothing");
      case 'P':
      case 'Q':
      case 0x82:
      case 0x83:
      case 0x84:
      case 0x97:
      case 0x98:
        fail(at, "uses a persistent id, an extension code or an out-of-band buffer: refused, a snapshot has none");
      case 'V':
      case 'S':
      case 'F':
      case 'L':
        fail(at, "a text opcode of pickle protocol 0 or 1: not read (PyTorch writes protocol 2 or later)");
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(at, std::string("opcode ") + hex + " is not a pickle opcode");
      }
    }
  }
}

}  // namespace gpudiag::import::pickle
