// What did the user mean? Tried in order: a rule, a number, an exact error
// name, a short form of a name, a name or a message inside a longer text
// (a pasted PyTorch traceback line). Anything else gets the closest names.
#include "gpudiag/explain/lookup.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace gpudiag::explain {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A name found under a name the user typed (maybe a driver name or an alias).
struct Named {
  std::string_view name;
  const ErrorEntry* entry;
};

// Every error name gpudiag knows, with the entry that explains it.
std::vector<Named> all_error_names() {
  std::vector<Named> names;
  for (const auto& e : cuda_runtime_errors()) names.push_back({e.name, &e});
  for (const auto& d : cuda_driver_codes()) names.push_back({d.name, find_cuda_driver_error(d.code)});
  for (const auto& e : cudnn_statuses()) names.push_back({e.name, &e});
  for (const auto& a : cudnn_aliases()) names.push_back({a.name, find_cudnn_status(a.code)});
  for (const auto& e : cublas_statuses()) names.push_back({e.name, &e});
  return names;
}

ErrorMatch match_for(const Named& named) {
  ErrorMatch m{named.entry, {}};
  if (named.name != named.entry->name) m.alias = std::string(named.name);
  return m;
}

LookupResult error_result(const Named& named) {
  LookupResult r;
  r.kind = LookupResult::Kind::Error;
  r.error = match_for(named);
  for (const auto& a : cudnn_aliases()) {
    if (a.name == named.name) {
      r.notes.push_back(fmt::format("{} is the cuDNN 8 name; cuDNN 9 keeps it as a deprecated alias of {} ({}).",
                                    a.name, named.entry->name, named.entry->code));
    }
  }
  return r;
}

std::optional<long long> parse_number(std::string_view s) {
  long long value = 0;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

LookupResult by_number(long long number) {
  LookupResult r;
  if (number < 0 || number > 100000) return r;
  const int code = static_cast<int>(number);
  const ErrorEntry* runtime = find_cuda_runtime_error(code);
  const ErrorEntry* driver = find_cuda_driver_error(code);
  const ErrorEntry* cudnn = find_cudnn_status(code);
  const ErrorEntry* cublas = find_cublas_status(code);
  const std::string_view driver_name = driver_name_for(code);
  const ErrorEntry* primary = runtime ? runtime : driver ? driver : cudnn ? cudnn : cublas;
  if (primary == nullptr) return r;
  r.kind = LookupResult::Kind::Error;
  r.error.entry = primary;
  if (runtime && driver_name.empty()) {
    r.notes.push_back(fmt::format("The driver API has no CUresult numbered {}.", code));
  }
  if (cudnn && primary != cudnn) {
    r.notes.push_back(fmt::format("{} is also the cuDNN status {}: run `gpudiag explain {}`.", code, cudnn->name,
                                  cudnn->name));
  }
  if (cublas && primary != cublas) {
    r.notes.push_back(fmt::format("{} is also the cuBLAS status {}: run `gpudiag explain {}`.", code,
                                  cublas->name, cublas->name));
  }
  return r;
}

// "BAD_PARAM" -> CUDNN_STATUS_BAD_PARAM, "IllegalAddress" -> cudaErrorIllegalAddress.
std::vector<Named> by_short_form(std::string_view query, const std::vector<Named>& names) {
  std::string q = lower(query);
  std::replace(q.begin(), q.end(), '-', '_');
  std::vector<Named> hits;
  for (std::string_view prefix : {"cudaerror", "cuda_error_", "cudnn_status_", "cublas_status_"}) {
    for (const auto& n : names) {
      if (lower(n.name) != std::string(prefix) + q) continue;
      bool same = std::any_of(hits.begin(), hits.end(), [&](const Named& h) { return h.entry == n.entry; });
      if (!same) hits.push_back(n);
    }
  }
  return hits;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The longest known name that appears in the text as a whole word.
const Named* name_inside(std::string_view text, const std::vector<Named>& names) {
  const std::string t = lower(text);
  const Named* best = nullptr;
  for (const auto& n : names) {
    const std::string name = lower(n.name);
    for (auto pos = t.find(name); pos != std::string::npos; pos = t.find(name, pos + 1)) {
      const bool left_ok = pos == 0 || !is_name_char(t[pos - 1]);
      const bool right_ok = pos + name.size() == t.size() || !is_name_char(t[pos + name.size()]);
      if (left_ok && right_ok && (best == nullptr || n.name.size() > best->name.size())) best = &n;
    }
  }
  return best;
}

// Runtime and cuBLAS messages: exact first, else the longest one (of a
// reasonable length, so "file not found" does not match everything) inside.
const ErrorEntry* message_inside(std::string_view text, bool& exact) {
  const std::string t = lower(trim(text));
  const ErrorEntry* best = nullptr;
  exact = false;
  auto consider = [&](const ErrorEntry& e) {
    if (e.message.empty()) return;
    std::string m = lower(e.message);
    while (!m.empty() && m.back() == '.') m.pop_back();
    std::string_view tt = t;
    while (!tt.empty() && tt.back() == '.') tt.remove_suffix(1);
    if (tt == m) {
      if (!exact) best = &e;
      exact = true;
      return;
    }
    if (!exact && m.size() >= 12 && t.find(m) != std::string::npos &&
        (best == nullptr || m.size() > best->message.size())) {
      best = &e;
    }
  };
  for (const auto& e : cuda_runtime_errors()) consider(e);
  for (const auto& e : cublas_statuses()) consider(e);
  return best;
}

}  // namespace

LookupResult lookup(std::string_view query) {
  query = trim(query);
  LookupResult r;
  if (query.empty()) return r;

  if (const Rule* rule = find_rule(query)) {
    r.kind = LookupResult::Kind::Rule;
    r.rule = rule;
    return r;
  }
  if (auto number = parse_number(query)) {
    r = by_number(*number);
    if (r.kind == LookupResult::Kind::Unknown) {
      r.notes.push_back(fmt::format("No CUDA runtime or driver error, cuDNN status or cuBLAS status is numbered {}.",
                                    *number));
    }
    return r;
  }

  const auto names = all_error_names();
  for (const auto& n : names) {
    if (iequals(n.name, query)) return error_result(n);
  }
  if (auto hits = by_short_form(query, names); !hits.empty()) {
    if (hits.size() == 1) return error_result(hits.front());
    r.kind = LookupResult::Kind::Ambiguous;
    for (const auto& h : hits) r.candidates.emplace_back(h.name);
    return r;
  }
  if (const Named* inside = name_inside(query, names)) {
    r = error_result(*inside);
    r.notes.push_back(fmt::format("Matched the name {} in the text.", inside->name));
    return r;
  }
  bool exact = false;
  if (const ErrorEntry* e = message_inside(query, exact)) {
    r.kind = LookupResult::Kind::Error;
    r.error.entry = e;
    r.notes.push_back(exact ? fmt::format("Matched the message text of {}.", e->name)
                            : fmt::format("Matched the message \"{}\" of {} in the text.", e->message, e->name));
    for (const auto& other : cuda_runtime_errors()) {
      if (&other != e && other.message == e->message) {
        r.notes.push_back(fmt::format("{} ({}) has the same message.", other.name, other.code));
      }
    }
    return r;
  }
  r.candidates = closest_names(query);
  return r;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::string x = lower(a), y = lower(b);
  std::vector<std::size_t> row(y.size() + 1);
  for (std::size_t j = 0; j <= y.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= x.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= y.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[y.size()];
}

std::vector<std::string> closest_names(std::string_view query, std::size_t limit) {
  const std::string q = lower(trim(query));
  // Long text (a pasted log) is not a misspelt name, and edit distances over
  // it would cost time for nothing.
  if (q.empty() || q.size() > 100) return {};
  std::vector<std::string_view> names;
  for (const auto& rule : catalogue()) {
    names.push_back(rule.id);
    names.push_back(rule.name);
  }
  for (const auto& n : all_error_names()) names.push_back(n.name);

  struct Scored {
    std::string_view name;
    bool substring;
    std::size_t distance;
  };
  std::vector<Scored> scored;
  for (auto name : names) {
    const std::string n = lower(name);
    const bool substring = q.size() >= 3 && n.find(q) != std::string::npos;
    std::size_t distance = edit_distance(q, n);
    // Compare with the part after the library prefix too: BAD_PARM ~ CUDNN_STATUS_BAD_PARAM.
    for (std::string_view prefix : {"cudaerror", "cuda_error_", "cudnn_status_", "cublas_status_"}) {
      if (n.starts_with(prefix)) distance = std::min(distance, edit_distance(q, n.substr(prefix.size())));
    }
    const std::size_t allowed = std::max<std::size_t>(2, q.size() / 3);
    if (substring || distance <= allowed) scored.push_back({name, substring, distance});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    if (a.substring != b.substring) return a.substring;
    return a.distance < b.distance;
  });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), s.name) == out.end()) out.emplace_back(s.name);
  }
  return out;
}

}  // namespace gpudiag::explain
