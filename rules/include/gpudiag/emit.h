// Emitters shared by gpulint and gpudiag: clang-style text, JSON, SARIF 2.1.0.
#pragma once

#include <iosfwd>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gpudiag/finding.h"

namespace gpudiag {

struct TextOptions {
  bool color = false;         // ANSI colour (callers decide: terminal and no NO_COLOR)
  bool show_source = true;    // the source line and a caret when the file is readable
};

// `file:line:col: warning: message [GD004 premature-free]`, source line, caret, notes.
void emit_text(std::ostream& out, std::span<const Finding> findings, const TextOptions& options);

// True when colour should be used on this stream's file descriptor: a
// terminal and NO_COLOR unset (https://no-color.org).
bool want_color(int fd);

nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(std::span<const Finding> findings);
void emit_json(std::ostream& out, std::span<const Finding> findings);

struct SarifOptions {
  std::string tool_name = "gpudiag";
  std::string tool_version;
  std::string information_uri;
  std::string base_dir;  // artifact URIs are made relative to it (uriBaseId SRCROOT)
};

nlohmann::json to_sarif(std::span<const Finding> findings, const SarifOptions& options);
void emit_sarif(std::ostream& out, std::span<const Finding> findings, const SarifOptions& options);

}  // namespace gpudiag
