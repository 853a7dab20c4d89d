// Reading fields of Chrome-trace events with simdjson's on-demand API, for
// the Kineto importer: lenient about types (quoted numbers, words where
// numbers go), strict about JSON validity (InvalidJson).
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gpudiag::import::kineto_json {

namespace od = simdjson::ondemand;

// Some writers quote numbers ("12.5"); others put words where numbers go
// ("stream 7" as a tid). Same acceptance as std::stod (strtod: leading blanks,
// a numeric prefix, out of range refused) but without throwing: the older
// traces have a quoted tid on every GPU event, and an exception each costs
// microseconds of unwinding.
inline std::optional<double> quoted_number(std::string_view s) {
  char small[64];
  std::string large;
  const char* text = small;
  if (s.size() < sizeof small) {
    std::memcpy(small, s.data(), s.size());
    small[s.size()] = '\0';
  } else {
    large.assign(s);
    text = large.c_str();
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || errno == ERANGE) return std::nullopt;
  return v;
}

// On-demand parsing validates the document as it is walked; after an error
// other than "wrong type" or "no such field" the walk cannot go on, and the
// input is not valid JSON. run() turns this into a TraceError.
struct InvalidJson {
  simdjson::error_code code;
};

// True on success, false when the value is absent or of another type.
inline bool found(simdjson::error_code e) {
  if (e == simdjson::SUCCESS) return true;
  if (e == simdjson::INCORRECT_TYPE || e == simdjson::NO_SUCH_FIELD) return false;
  throw InvalidJson{e};
}

// A JSON number as read: integers stay exact (timestamps in microseconds
// times 1000 must not round through a double).
struct Number {
  enum class Kind { None, Int, Uint, Double } kind = Kind::None;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  // A Double's text as written, valid while the document is: a timestamp of
  // 19 significant digits (1712195495505582.988) is exact only there.
  std::string_view text;

  std::optional<double> as_double() const {
    switch (kind) {
      case Kind::Int: return static_cast<double>(i);
      case Kind::Uint: return static_cast<double>(u);
      case Kind::Double: return d;
      default: return std::nullopt;
    }
  }
};

// Reads a value (consuming it) as a number; quoted numbers are accepted.
inline Number read_number(od::value v) {
  Number n;
  od::json_type type;
  if (!found(v.type().get(type))) return n;
  if (type == od::json_type::string) {
    std::string_view s;
    if (!found(v.get_string().get(s))) return n;
    if (auto d = quoted_number(s)) n.kind = Number::Kind::Double, n.d = *d, n.text = s;
    return n;
  }
  if (type != od::json_type::number) return n;
  const std::string_view text = v.raw_json_token();
  od::number num;
  if (!found(v.get_number().get(num))) return n;
  switch (num.get_number_type()) {
    case od::number_type::signed_integer: n.kind = Number::Kind::Int, n.i = num.get_int64(); break;
    case od::number_type::unsigned_integer: n.kind = Number::Kind::Uint, n.u = num.get_uint64(); break;
    default: n.kind = Number::Kind::Double, n.d = num.get_double(), n.text = text; break;
  }
  return n;
}

// Finds `key` in o (in any order: Kineto's usual order makes each lookup
// continue where the previous one stopped).
inline Number number_field(od::object& o, std::string_view key) {
  od::value v;
  if (!found(o.find_field_unordered(key).get(v))) return {};
  return read_number(v);
}

inline std::optional<double> field(od::object& o, std::string_view key) { return number_field(o, key).as_double(); }

inline std::int64_t int_field(od::object& o, std::string_view key, std::int64_t fallback) {
  auto v = field(o, key);
  return v && std::isfinite(*v) ? static_cast<std::int64_t>(*v) : fallback;
}

// The event's "args" object, if it has one.
inline bool args_of(od::object& ev, od::object& args) {
  od::value value;
  return found(ev.find_field_unordered("args").get(value)) && found(value.get_object().get(args));
}

inline std::string_view str_field(od::object& o, std::string_view key) {
  od::value v;
  std::string_view s;
  if (!found(o.find_field_unordered(key).get(v)) || !found(v.get_string().get(s))) return {};
  return s;
}

// Microseconds beyond this are absurd for a timestamp (year 2540) and would
// overflow nanoseconds in 64 bits.
inline constexpr std::uint64_t kMaxMicros = 18'000'000'000'000'000ull;

// A decimal number of microseconds ("1712195495505582.988", "1.5e3", " 12")
// to nanoseconds, exactly, rounded half up past the nanosecond: near 1.7e15
// microseconds a double's step is 0.25 us, so the text is read digit by
// digit. nullopt for text that is not such a number, negative, or absurd.
inline std::optional<std::uint64_t> decimal_micros_to_ns(std::string_view s) {
  std::size_t i = 0;
  const auto digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  if (i < s.size() && s[i] == '+') ++i;
  // The significant digits (leading zeros dropped), and how many of them
  // stand before the decimal point.
  char digits[40];
  std::size_t count = 0;
  long point = 0;
  bool any = false;
  const auto take = [&](char c, bool before_point) {
    any = true;
    if (count == 0 && c == '0') {
      if (!before_point) --point;
      return;
    }
    if (count < sizeof digits) digits[count++] = c;
    else if (!before_point) return;  // past 1e-30 us: nothing a nanosecond rounds on
    if (before_point) ++point;
  };
  for (; digit(i); ++i) take(s[i], true);
  if (i < s.size() && s[i] == '.')
    for (++i; digit(i); ++i) take(s[i], false);
  if (!any) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    if (!digit(i)) return std::nullopt;
    long e = 0;
    for (; digit(i); ++i) e = std::min(e * 10 + (s[i] - '0'), 1000L);
    point += negative ? -e : e;
  }
  if (count == 0) return 0;
  point += 3;  // microseconds to nanoseconds
  constexpr std::uint64_t kMaxNs = kMaxMicros * 1000;
  std::uint64_t ns = 0;
  for (long k = 0; k < point; ++k) {
    const unsigned d = k < static_cast<long>(count) ? static_cast<unsigned>(digits[k] - '0') : 0;
    if (ns > (kMaxNs - d) / 10) return std::nullopt;
    ns = ns * 10 + d;
  }
  // Half up, on the first digit past the nanosecond.
  if (point >= 0 && point < static_cast<long>(count) && digits[point] >= '5') ++ns;
  if (ns > kMaxNs) return std::nullopt;
  return ns;
}

// Chrome-trace timestamps are microseconds (fractions carry nanoseconds).
// Integers and decimal text are converted exactly; negative or absurd values
// become 0.
inline std::uint64_t micros_to_ns(const Number& n) {
  if (n.kind == Number::Kind::Uint) return n.u <= kMaxMicros ? n.u * 1000u : 0;
  if (n.kind == Number::Kind::Int) return n.i > 0 && static_cast<std::uint64_t>(n.i) <= kMaxMicros ? static_cast<std::uint64_t>(n.i) * 1000u : 0;
  if (!n.text.empty()) return decimal_micros_to_ns(n.text).value_or(0);
  auto v = n.as_double();
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > static_cast<double>(kMaxMicros)) return 0;
  return static_cast<std::uint64_t>(std::llround(*v * 1000.0));
}

inline std::uint32_t u32(std::int64_t v) { return v < 0 ? 0 : static_cast<std::uint32_t>(std::min<std::int64_t>(v, UINT32_MAX)); }

inline std::uint32_t tid_of(const Number& n) {
  if (auto v = n.as_double(); v && std::isfinite(*v) && *v >= 0) return u32(static_cast<std::int64_t>(*v));
  return 0;
}

inline void dims(od::object& args, std::string_view key, std::uint32_t out[3]) {
  od::value value;
  od::array a;
  if (!found(args.find_field_unordered(key).get(value)) || !found(value.get_array().get(a))) return;
  // Walked to its end even past three elements: leaving an on-demand array
  // early lets a malformed rest go unnoticed.
  std::size_t i = 0;
  for (auto item : a) {
    od::value v;
    if (auto err = std::move(item).get(v)) throw InvalidJson{err};
    auto n = read_number(v).as_double();
    if (i < 3) out[i++] = n && std::isfinite(*n) ? u32(static_cast<std::int64_t>(*n)) : 0;
  }
}

}  // namespace gpudiag::import::kineto_json
