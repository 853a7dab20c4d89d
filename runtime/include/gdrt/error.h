// gdrt::Error: every runtime error. When the error is one of gpudiag's rules
// (GD001 device-mismatch, GD002 float64-leak, GD005 scalar-indexing, ...) the
// rule id travels with it so tools can link to the catalogue entry.
#pragma once

#include <stdexcept>
#include <string>

namespace gdrt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  // `rule` is a catalogue id such as "GD001"; the message is prefixed with
  // the rule's tag, "GD001 device-mismatch: ...", as in the catalogue.
  Error(std::string rule, const std::string& message)
      : std::runtime_error(tag(rule) + ": " + message), rule_(std::move(rule)) {}
  // Empty when no rule applies.
  const std::string& rule() const noexcept { return rule_; }

 private:
  // The rules libgdrt raises itself (names from rules/<name>.md).
  static std::string tag(const std::string& rule) {
    if (rule == "GD001") return rule + " device-mismatch";
    if (rule == "GD002") return rule + " float64-leak";
    if (rule == "GD005") return rule + " scalar-indexing";
    if (rule == "GD008") return rule + " out-of-memory";
    return rule;
  }
  std::string rule_;
};

}  // namespace gdrt
