// The one Finding type that gpulint and the tracer both produce.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag {

enum class Severity : std::uint8_t { Note, Warning, Error };

std::string_view to_string(Severity s);
// "note" | "warning" | "error" (case-insensitive); nullopt otherwise.
std::optional<Severity> parse_severity(std::string_view text);

// A position in a source file; line and column are 1-based, 0 means unknown.
struct SourceLocation {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;

  bool known() const { return !file.empty(); }
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

// One frame of a host stack captured at run time (innermost first in a stack).
struct Frame {
  std::string function;  // demangled when possible
  std::string module;    // shared object or executable
  std::string file;      // empty when no debug info
  unsigned line = 0;
  std::uint64_t address = 0;

  friend bool operator==(const Frame&, const Frame&) = default;
};

struct Note {
  std::string message;
  SourceLocation location;  // may be unknown
  std::vector<Frame> stack; // runtime notes: e.g. the stack that allocated
};

// A replacement of the text between begin and end (end exclusive, same file).
struct FixIt {
  SourceLocation begin;
  SourceLocation end;
  std::string replacement;
};

struct Finding {
  std::string rule_id;       // stable id from the catalogue, e.g. "GD004"
  Severity severity = Severity::Warning;
  std::string message;       // what happened; the fix is in a note or the message
  SourceLocation location;   // static findings: where
  std::vector<Frame> stack;  // runtime findings: where (innermost first)
  std::vector<Note> notes;
  std::optional<FixIt> fix;
};

}  // namespace gpudiag
