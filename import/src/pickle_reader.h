// A data-only reader of Python pickles (protocols 0 to 5), for PyTorch's
// memory snapshots. It builds None, bools, integers, floats, strings,
// bytes, lists, tuples, sets and dicts, and nothing else: a pickle that asks
// for a global, a reduce, a build, an object or a persistent id is refused
// with TraceError before anything of it is used, so no code named in a
// file ever runs (Python's pickle.load would run it).
//
// It streams: the caller sees each batch of items appended to a list as it
// is appended, and may release the ones it has consumed, so a snapshot's
// millions of trace entries are never all held as values at once.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pickle_input.h"
#include "pickle_memo.h"
#include "pickle_value.h"

namespace gpudiag::import::pickle {

class Reader {
 public:
  // Called with the items an APPEND or APPENDS adds to the list `list`
  // (its container index); an item the callback replaces by a Released
  // value is dropped from the list and from the memo.
  using OnAppend = std::function<void(std::uint32_t list, std::span<Value> items)>;

  explicit Reader(std::string name) : name_(std::move(name)) {}
  // Reads the pickle in `bytes` to its STOP; returns the top value.
  // Throws TraceError naming the reader and the offset: bad or cut bytes,
  // a refused opcode, too deep or too large.
  Value read(std::string_view bytes, const OnAppend& on_append = {});
  // The same, from a file read a buffer at a time.
  Value read_file(const std::string& path, const OnAppend& on_append = {});

  const std::string& string(const Value& v) const { return strings_[v.index]; }
  // A list's, tuple's or set's items; a dict's keys and values, alternating.
  const std::vector<Value>& items(const Value& v) const { return containers_[v.index].items; }
  // The value of `key` in dict `dict`, or a None when it has none.
  Value get(const Value& dict, std::string_view key) const;
  std::int64_t as_int(const Value& v, std::int64_t otherwise = 0) const;
  std::uint64_t as_u64(const Value& v, std::uint64_t otherwise = 0) const;
  std::string_view as_string(const Value& v) const;
  // Frees what a released item held (its container, and its place in the
  // memo): a later reference to it is an error.
  void release(Value& v);

 private:
  Value read(Input& input, const OnAppend& on_append);
  [[noreturn]] void fail(std::size_t at, const std::string& why) const;
  Value new_container(Value::Kind kind);
  Value new_string(std::string_view s);

  std::string name_;
  struct Container {
    std::vector<Value> items;
    std::uint64_t memo_key = kNotInMemo;
  };
  static constexpr std::uint64_t kNotInMemo = ~std::uint64_t{0};

  std::deque<std::string> strings_;  // a deque: the index of short strings holds views into them
  std::vector<Container> containers_;
  std::vector<std::uint32_t> free_containers_;  // of released items, to be used again
  Memo memo_;
};

}  // namespace gpudiag::import::pickle
