// Clang-style text diagnostics, as an ML/CUDA engineer reads them from clang,
// clang-tidy and the sanitizers:
//   train.cu:42:5: warning: message [GD004 premature-free]
//      42 |     cudaFree(buf);
//         |     ^
//       #0 0x4011d6 in train_step train.cu:42 (train)      (runtime findings)
//   train.cu:30:3: note: message
#include <unistd.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "source_cache.h"
#include "text_snippet.h"
#include "utf8.h"

namespace gpudiag {
namespace {

// The escape sequences clang uses.
constexpr std::string_view kBold = "\033[1m";
constexpr std::string_view kReset = "\033[0m";
constexpr std::string_view kWarningColor = "\033[0;1;35m";  // bold magenta
constexpr std::string_view kErrorColor = "\033[0;1;31m";    // bold red
constexpr std::string_view kNoteColor = "\033[0;1;36m";     // bold cyan

// Text from a finding made safe for a terminal: valid UTF-8, and control
// characters shown as <U+001B> so a message cannot move the cursor or change
// colours. Line breaks survive only where `keep_newlines` (message bodies).
std::string printable(std::string_view text, bool keep_newlines) {
  const std::string valid = detail::valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (const char ch : valid) {
    const auto byte = static_cast<unsigned char>(ch);
    const bool control = byte < 0x20 || byte == 0x7F;
    if (!control || ch == '\t' || (ch == '\n' && keep_newlines)) {
      out.push_back(ch);
    } else {
      out += fmt::format("<U+{:04X}>", static_cast<unsigned>(byte));
    }
  }
  return out;
}

std::string_view severity_color(Severity severity) {
  switch (severity) {
    case Severity::Error: return kErrorColor;
    case Severity::Warning: return kWarningColor;
    case Severity::Note: break;
  }
  return kNoteColor;
}

std::string location_text(const SourceLocation& location, std::string_view program) {
  if (!location.known()) return std::string(program);
  std::string text = printable(location.file, false);
  if (location.line != 0) {
    text += fmt::format(":{}", location.line);
    if (location.column != 0) text += fmt::format(":{}", location.column);
  }
  return text;
}

std::string rule_suffix(std::string_view rule_id) {
  if (rule_id.empty()) return {};
  if (const Rule* rule = find_rule(rule_id)) return " [" + rule_tag(*rule) + "]";
  return " [" + printable(rule_id, false) + "]";
}

class TextEmitter {
 public:
  TextEmitter(std::ostream& out, const TextOptions& options) : out_(out), options_(options) {}

  void finding(const Finding& finding) {
    header(finding.location, finding.severity, finding.message, rule_suffix(finding.rule_id));
    const FixIt* fix = finding.fix ? &*finding.fix : nullptr;
    bool fix_drawn = false;
    if (options_.show_source && finding.location.known()) {
      const bool inline_fix = fix != nullptr && detail::fix_fits_snippet(*fix, finding.location);
      const bool drawn = detail::print_snippet(out_, sources_, finding.location,
                                               inline_fix ? fix : nullptr, options_.color);
      fix_drawn = drawn && inline_fix;
    }
    if (fix != nullptr && !fix_drawn) parseable_fix(*fix);
    stack(finding.stack);
    for (const Note& note : finding.notes) this->note(note);
  }

 private:
  void header(const SourceLocation& location, Severity severity, std::string_view message,
              std::string_view suffix) {
    const bool color = options_.color;
    if (color) out_ << kBold;
    out_ << location_text(location, options_.program_name) << ": ";
    if (color) out_ << kReset << severity_color(severity);
    out_ << to_string(severity) << ": ";
    if (color) {
      out_ << kReset;
      // clang prints the text of warnings and errors in bold, notes plain.
      if (severity != Severity::Note) out_ << kBold;
    }
    out_ << printable(message, true) << suffix;
    if (color) out_ << kReset;
    out_ << '\n';
  }

  void note(const Note& note) {
    header(note.location, Severity::Note, note.message, {});
    if (options_.show_source && note.location.known()) {
      detail::print_snippet(out_, sources_, note.location, nullptr, options_.color);
    }
    stack(note.stack);
  }

  // As the sanitizers print them: `    #0 0x4011d6 in main /src/a.cpp:12 (a.out)`.
  void stack(const std::vector<Frame>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const Frame& frame = frames[i];
      out_ << fmt::format("    #{} 0x{:x}", i, frame.address);
      if (!frame.function.empty()) out_ << " in " << printable(frame.function, false);
      if (!frame.file.empty()) {
        out_ << ' ' << printable(frame.file, false);
        if (frame.line != 0) out_ << ':' << frame.line;
      }
      if (!frame.module.empty()) out_ << " (" << printable(frame.module, false) << ')';
      out_ << '\n';
    }
  }

  // A fix-it that cannot be drawn under the line, in clang's
  // -fdiagnostics-parseable-fixits form: fix-it:"file":{l:c-l:c}:"text".
  void parseable_fix(const FixIt& fix) {
    const SourceLocation& end = fix.end.line != 0 ? fix.end : fix.begin;
    out_ << "fix-it:\"" << escaped(fix.begin.file) << "\":{" << fix.begin.line << ':'
         << fix.begin.column << '-' << end.line << ':' << end.column << "}:\""
         << escaped(fix.replacement) << "\"\n";
  }

  static std::string escaped(std::string_view text) {
    std::string out;
    for (const char ch : detail::valid_utf8(text)) {
      const auto byte = static_cast<unsigned char>(ch);
      switch (ch) {
        case '\\': out += "\\\\"; break;
        case '"': out += "\\\""; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
          if (byte < 0x20 || byte == 0x7F) {
            out += fmt::format("\\{:03o}", static_cast<unsigned>(byte));
          } else {
            out.push_back(ch);
          }
      }
    }
    return out;
  }

  std::ostream& out_;
  const TextOptions& options_;
  detail::SourceCache sources_;  // one per call: files are read once, then dropped
};

}  // namespace

void emit_text(std::ostream& out, std::span<const Finding> findings, const TextOptions& options) {
  TextEmitter emitter(out, options);
  for (const Finding& finding : findings) emitter.finding(finding);
}

bool want_color(int fd) {
  if (isatty(fd) == 0) return false;
  // https://no-color.org: any non-empty NO_COLOR disables colour.
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  // A terminal that declares itself dumb does not interpret escapes.
  const char* term = std::getenv("TERM");
  return term == nullptr || std::string_view(term) != "dumb";
}

}  // namespace gpudiag
