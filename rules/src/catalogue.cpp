// The catalogue served from the entries embedded at build time.
#include "gpudiag/catalogue.h"

#include <cctype>
#include <string>
#include <vector>

#include "catalogue_parse.h"
#include "catalogue_sources.h"

namespace gpudiag {
namespace {

struct Embedded {
  std::vector<Rule> rules;
  std::vector<std::string> problems;
};

// Parsed once, on first use; thread-safe as a function-local static.
const Embedded& embedded() {
  static const Embedded instance = [] {
    Embedded e;
    e.rules = detail::build_catalogue(
        std::span(detail::kCatalogueSources, detail::kCatalogueSourceCount), &e.problems);
    return e;
  }();
  return instance;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const Rule> catalogue() { return embedded().rules; }

const Rule* find_rule(std::string_view id_or_name) {
  for (const Rule& rule : catalogue()) {
    if (equals_ignoring_case(rule.id, id_or_name) || equals_ignoring_case(rule.name, id_or_name)) {
      return &rule;
    }
  }
  return nullptr;
}

const Rule* find_rule_named(std::string_view name) {
  for (const Rule& rule : catalogue())
    if (rule.name == name) return &rule;
  return nullptr;
}

std::string rule_tag(const Rule& rule) {
  std::string tag;
  tag.reserve(rule.id.size() + 1 + rule.name.size());
  tag.append(rule.id).append(" ").append(rule.name);
  return tag;
}

namespace detail {

const std::vector<std::string>& embedded_catalogue_problems() { return embedded().problems; }

}  // namespace detail
}  // namespace gpudiag
