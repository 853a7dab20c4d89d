// Emitters shared by gpulint and gpudiag: clang-style text, JSON, SARIF 2.1.0.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpudiag/finding.h"

namespace gpudiag {

struct TextOptions {
  bool color = false;         // ANSI colour (callers decide: terminal and no NO_COLOR)
  bool show_source = true;    // the source line and a caret when the file is readable
  std::string program_name = "gpudiag";  // prefix of findings without a location
};

// `file:line:col: warning: message [GD004 premature-free]`, then the source
// line with a caret (and a fix-it under it), runtime stack frames as the
// sanitizers print them (`    #0 0x4011d6 in main a.cpp:12 (a.out)`), then
// each note (`file:line:col: note: ...`) with its own snippet and stack.
// Without a location the line starts `gpudiag: warning: ...`. A fix-it that
// cannot be drawn under its line is printed as clang's parseable
// `fix-it:"file":{l:c-l:c}:"text"`. Control characters in messages are shown
// as <U+001B>, never sent to the terminal. No summary line: callers add one.
void emit_text(std::ostream& out, std::span<const Finding> findings, const TextOptions& options);

// True when colour should be used on this file descriptor: a terminal, NO_COLOR
// unset or empty (https://no-color.org), and TERM not "dumb".
bool want_color(int fd);

// The JSON schema (absent parts are omitted; every string is valid UTF-8,
// invalid bytes become U+FFFD, so the value can be dumped with defaults):
//   {"findings": [{"rule": "GD004", "name": "premature-free" (catalogue rules only),
//     "severity": "error", "message": "...",
//     "location": {"file": "a.cu", "line": 3, "column": 5},
//     "stack": [{"address": "0x4011d6", "function": "f", "file": "a.cu", "line": 3,
//                "module": "a.out"}],       (innermost first; address as a hex string)
//     "notes": [{"message": "...", "location": {...}, "stack": [...]}],
//     "fix": {"begin": {...location}, "end": {...location}, "replacement": "..."}}]}
nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(std::span<const Finding> findings);
void emit_json(std::ostream& out, std::span<const Finding> findings);
// The inverse of to_json(const Finding&), for findings made by another
// process (a job's per-rank summaries). Throws (nlohmann::json::exception,
// std::invalid_argument) on JSON of another shape.
Finding finding_from_json(const nlohmann::json& j);

// A condition of the run that is not a finding but limits what the results
// can be trusted for (e.g. events dropped while recording a trace).
struct SarifNotification {
  std::string id;           // stable, e.g. "dropped-events"
  std::string description;  // what the id means, the same every run
  std::string message;      // what happened this time
};

// A rule outside the catalogue that the tool itself reports (gpulint's
// clang-diagnostic-error), described in tool.driver.rules like the others.
struct SarifRule {
  std::string id;
  std::string description;
  Severity level = Severity::Warning;  // its defaultConfiguration
};

struct SarifOptions {
  std::string tool_name = "gpudiag";
  std::string tool_version;
  std::string information_uri;
  std::string base_dir;  // artifact URIs are made relative to it (uriBaseId SRCROOT);
                         // empty: the current working directory
  std::vector<SarifNotification> warnings;  // see to_sarif
  std::vector<SarifRule> tool_rules;         // descriptors of ids the catalogue does not have
};

// A SARIF 2.1.0 log as GitHub code scanning takes it. tool.driver.rules holds
// the catalogue rules the findings use (plus, for an id the catalogue does not
// know, its options.tool_rules descriptor or a bare one), ordered by id;
// result.ruleIndex points into it.
// Files under base_dir get a relative, percent-encoded URI with uriBaseId
// SRCROOT; others an absolute file:// URI. A runtime finding is located at
// its innermost stack frame that has a file (else a logical location named
// after its function) and carries the whole stack in result.stacks; notes
// become relatedLocations (or stacks, for their stacks); a fix-it becomes a
// SARIF fix. Columns are converted from the findings' bytes to Unicode code
// points (columnKind "unicodeCodePoints") where the source line is readable.
// partialFingerprints.primaryLocationLineHash is
// "<16 hex digits>:<n>": FNV-1a 64 of rule id, relative URI and the located
// source line with whitespace removed (or, when the line cannot be read, the
// message with hex numbers and digit runs blanked out, so addresses and sizes
// that change between runs do not change it); n counts equal hashes within
// the run. It therefore survives lines moving and re-runs.
// runs[0].invocations[0] has executionSuccessful true (the analysis ran to
// its end) and one toolExecutionNotifications entry per options.warnings,
// level "warning", its descriptor.id naming a tool.driver.notifications
// descriptor, so a viewer can say the results may be incomplete.
nlohmann::json to_sarif(std::span<const Finding> findings, const SarifOptions& options);
void emit_sarif(std::ostream& out, std::span<const Finding> findings, const SarifOptions& options);

}  // namespace gpudiag
