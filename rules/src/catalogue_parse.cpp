// Front-matter parser and validator for rules/<name>.md. A broken entry is a
// bug in the catalogue: the tests report it with the reason, and at run time
// the entry is skipped so one bad file cannot take the tools down.
#include "catalogue_parse.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace gpudiag::detail {
namespace {

constexpr std::string_view kFence = "---";
constexpr std::array<std::string_view, 5> kKeys{"id", "name", "severity", "applies", "summary"};

// Reads a text line by line; accepts "\n" and "\r\n" endings.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  bool done() const { return pos_ >= text_.size(); }
  std::size_t position() const { return pos_; }
  unsigned line_number() const { return line_; }

  std::string_view next() {
    const std::size_t end = std::min(text_.find('\n', pos_), text_.size());
    std::string_view line = text_.substr(pos_, end - pos_);
    pos_ = end < text_.size() ? end + 1 : end;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  unsigned line_ = 0;
};

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_rule_id(std::string_view id) {
  return id.size() == 5 && id.starts_with("GD") &&
         std::all_of(id.begin() + 2, id.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// kebab-case: lower-case words of letters and digits joined by single hyphens.
bool is_kebab_case(std::string_view name) {
  if (name.empty() || name.front() == '-' || name.back() == '-') return false;
  char previous = '\0';
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && previous == '-')) return false;
    previous = c;
  }
  return true;
}

struct FrontMatter {
  std::array<std::string_view, kKeys.size()> values{};
  std::array<bool, kKeys.size()> seen{};

  std::string_view get(std::string_view key) const {
    for (std::size_t i = 0; i < kKeys.size(); ++i) {
      if (kKeys[i] == key) return values[i];
    }
    return {};
  }
};

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// Reads `key: value` lines up to the closing fence into `fm`.
bool read_front_matter(LineReader& reader, FrontMatter& fm, std::string* error) {
  if (reader.done() || reader.next() != kFence) {
    return fail(error, "no front matter: the entry must start with a '---' line");
  }
  while (!reader.done()) {
    const unsigned number = reader.line_number() + 1;
    const std::string_view line = reader.next();
    if (line == kFence) {
      for (std::size_t i = 0; i < kKeys.size(); ++i) {
        if (!fm.seen[i]) return fail(error, fmt::format("front matter has no '{}'", kKeys[i]));
      }
      return true;
    }
    if (trim(line).empty()) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return fail(error, fmt::format("line {}: expected 'key: value', found '{}'", number, line));
    }
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    const auto it = std::find(kKeys.begin(), kKeys.end(), key);
    if (it == kKeys.end()) {
      return fail(error, fmt::format("line {}: unknown key '{}' (expected one of id, name, "
                                     "severity, applies, summary)",
                                     number, key));
    }
    const auto index = static_cast<std::size_t>(it - kKeys.begin());
    if (fm.seen[index]) return fail(error, fmt::format("line {}: '{}' given twice", number, key));
    if (value.empty()) return fail(error, fmt::format("line {}: '{}' is empty", number, key));
    fm.seen[index] = true;
    fm.values[index] = value;
  }
  return fail(error, "front matter is not closed by a '---' line (truncated entry?)");
}

bool parse_applies(std::string_view text, Rule& rule, std::string* error) {
  rule.is_static = false;
  rule.is_runtime = false;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view token = trim(text.substr(0, comma));
    if (token == "static") {
      rule.is_static = true;
    } else if (token == "runtime") {
      rule.is_runtime = true;
    } else {
      return fail(error, fmt::format("applies: '{}' is not 'static' or 'runtime'", token));
    }
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::optional<Rule> parse_rule_entry(std::string_view stem, std::string_view markdown,
                                     std::string* error) {
  // An editor may have saved the file with a UTF-8 byte order mark.
  if (markdown.starts_with("\xEF\xBB\xBF")) markdown.remove_prefix(3);

  LineReader reader(markdown);
  FrontMatter fm;
  if (!read_front_matter(reader, fm, error)) return std::nullopt;

  Rule rule{};
  rule.id = fm.get("id");
  rule.name = fm.get("name");
  rule.summary = fm.get("summary");
  if (!is_rule_id(rule.id)) {
    fail(error, fmt::format("id '{}' is not of the form GDnnn (e.g. GD004)", rule.id));
    return std::nullopt;
  }
  if (!is_kebab_case(rule.name)) {
    fail(error, fmt::format("name '{}' is not kebab-case", rule.name));
    return std::nullopt;
  }
  if (rule.name != stem) {
    fail(error, fmt::format("name '{}' differs from the file name '{}.md'", rule.name, stem));
    return std::nullopt;
  }
  const std::string_view severity = fm.get("severity");
  const std::optional<Severity> parsed = parse_severity(severity);
  if (!parsed) {
    fail(error, fmt::format("severity '{}' is not note, warning or error", severity));
    return std::nullopt;
  }
  rule.severity = *parsed;
  if (!parse_applies(fm.get("applies"), rule, error)) return std::nullopt;

  // The body starts at its title; blank lines after the front matter are fine.
  std::size_t body_start = reader.position();
  std::string_view title;
  while (!reader.done() && title.empty()) {
    body_start = reader.position();
    title = trim(reader.next());
  }
  const std::string expected_title = fmt::format("# {} ({})", rule.name, rule.id);
  if (title.empty()) {
    fail(error, "no text after the front matter");
    return std::nullopt;
  }
  if (title != expected_title) {
    fail(error, fmt::format("the body must start with '{}', found '{}'", expected_title, title));
    return std::nullopt;
  }
  rule.markdown = markdown.substr(body_start);
  return rule;
}

std::vector<Rule> build_catalogue(std::span<const CatalogueSource> sources,
                                  std::vector<std::string>* problems) {
  std::vector<Rule> rules;
  rules.reserve(sources.size());
  const auto report = [&](std::string_view stem, std::string_view why) {
    if (problems != nullptr) problems->push_back(fmt::format("rules/{}.md: {}", stem, why));
  };
  for (const CatalogueSource& source : sources) {
    std::string error;
    std::optional<Rule> rule = parse_rule_entry(source.file_stem, source.markdown, &error);
    if (!rule) {
      report(source.file_stem, error);
      continue;
    }
    const auto same_id = std::find_if(rules.begin(), rules.end(),
                                      [&](const Rule& r) { return r.id == rule->id; });
    if (same_id != rules.end()) {
      report(source.file_stem, fmt::format("id {} is already used by {}", rule->id, same_id->name));
      continue;
    }
    const auto same_name = std::find_if(rules.begin(), rules.end(),
                                        [&](const Rule& r) { return r.name == rule->name; });
    if (same_name != rules.end()) {
      report(source.file_stem, fmt::format("name {} is already used by {}", rule->name, same_name->id));
      continue;
    }
    rules.push_back(*rule);
  }
  std::sort(rules.begin(), rules.end(), [](const Rule& a, const Rule& b) { return a.id < b.id; });
  return rules;
}

}  // namespace gpudiag::detail
