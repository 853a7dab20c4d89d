// Prints a lookup result for a terminal, as markdown, or as JSON.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "gpudiag/explain/lookup.h"

namespace gpudiag::explain {

enum class Format { Text, Markdown, Json };

// "text" | "markdown" | "json"; nullopt otherwise.
std::optional<Format> parse_format(std::string_view text);

struct RenderOptions {
  Format format = Format::Text;
  bool color = false;  // Text only: ANSI bold/colour
};

// Renders Kind::Rule and Kind::Error. (Ambiguous/Unknown are usage errors the
// caller reports with the candidates.)
void render(std::ostream& out, const LookupResult& result, const RenderOptions& options);

nlohmann::json to_json(const LookupResult& result);

// Everything explain knows: the rules, then every error of every library with
// its number, and whether gpudiag explains it or only names it.
void render_list(std::ostream& out, Format format);

// Markdown for a terminal: headings bold, fenced code indented four spaces
// without the fences, **bold** and `code` shown as such (colour when asked).
std::string markdown_for_terminal(std::string_view markdown, bool color);

}  // namespace gpudiag::explain
