// Renders a rule or an error entry as terminal text, markdown or JSON.
#include "gpudiag/explain/render.h"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpudiag::explain {
namespace {

constexpr std::string_view kReferenceDocs =
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html";

// Wraps prose at `width` columns; the first line starts with `first`, the
// others with as many spaces.
std::string wrap(std::string_view text, std::size_t width, std::string_view first) {
  const std::string rest(first.size(), ' ');
  std::string out;
  std::size_t column = 0;
  bool first_line = true;
  for (auto word : words_of(text)) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += '\n';
      column = 0;
    }
    if (column == 0) {
      const std::string_view indent = first_line ? first : std::string_view(rest);
      first_line = false;
      out += indent;
      column = indent.size();
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

std::string title_of(const ErrorMatch& match) {
  const ErrorEntry& e = *match.entry;
  if (match.alias.empty()) return fmt::format("{} ({}): {} error", e.name, e.code, to_string(e.library));
  if (match.alias.starts_with("CUDA_ERROR_")) {
    return fmt::format("{} ({}): CUDA driver error, the runtime's {}", match.alias, e.code, e.name);
  }
  return fmt::format("{} = {} ({}): {} status", match.alias, e.name, e.code, to_string(e.library));
}

std::string_view sticky_text() {
  return "Sticky: the CUDA context is corrupted. Every later CUDA call in this process fails with this error; "
         "only restarting the process recovers. The call that reported it is usually not the one that caused it.";
}

std::string_view reference_text() {
  return "gpudiag has no explanation of its own for this code; the message above is the library's. "
         "See the CUDA Runtime API reference (enum cudaError):";
}

struct Style {
  bool color;
  std::string bold(std::string_view s) const { return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s); }
  std::string heading(std::string_view s) const {
    return color ? fmt::format("\x1b[1;36m{}\x1b[0m", s) : std::string(s);
  }
  std::string warn(std::string_view s) const { return color ? fmt::format("\x1b[1;33m{}\x1b[0m", s) : std::string(s); }
};

std::string rule_line(std::string_view name) {
  const Rule* rule = find_rule(name);
  if (rule == nullptr) return std::string(name);
  return fmt::format("{}: {}", rule_tag(*rule), rule->summary);
}

void render_error_text(std::ostream& out, const LookupResult& r, const Style& style) {
  const ErrorEntry& e = *r.error.entry;
  out << style.bold(title_of(r.error)) << '\n';
  if (!e.message.empty()) out << "  \"" << e.message << "\"\n";
  if (e.library == Library::CudaRuntime) {
    if (auto driver = driver_name_for(e.code); !driver.empty() && driver != r.error.alias) {
      out << "  Driver API: " << driver << " (" << e.code << ")\n";
    }
  }
  if (e.sticky) out << '\n' << style.warn(wrap(sticky_text(), 100, "  ")) << '\n';
  if (!e.explained()) {
    out << '\n' << wrap(reference_text(), 100, "  ") << "\n  " << kReferenceDocs << '\n';
  } else {
    out << '\n' << style.heading("What it means") << '\n' << wrap(e.meaning, 100, "  ") << '\n';
    out << '\n' << style.heading("Usual causes") << '\n';
    for (auto cause : lines_of(e.causes)) out << wrap(cause, 100, "  - ") << '\n';
    if (auto rules = words_of(e.rules); !rules.empty()) {
      out << '\n' << style.heading("Rules to look at") << '\n';
      for (auto name : rules) out << "  " << rule_line(name) << '\n';
    }
    out << '\n' << style.heading("What to run next") << '\n';
    for (auto step : lines_of(e.next)) out << "  " << step << '\n';
  }
  if (!r.notes.empty()) {
    out << '\n';
    for (const auto& note : r.notes) out << wrap(note, 100, "  note: ") << '\n';
  }
}

void render_error_markdown(std::ostream& out, const LookupResult& r) {
  const ErrorEntry& e = *r.error.entry;
  out << "# " << title_of(r.error) << "\n\n";
  if (!e.message.empty()) out << "Message: `" << e.message << "`\n\n";
  if (e.library == Library::CudaRuntime) {
    if (auto driver = driver_name_for(e.code); !driver.empty() && driver != r.error.alias) {
      out << "Driver API: `" << driver << "` (" << e.code << ")\n\n";
    }
  }
  if (e.sticky) out << "**" << sticky_text() << "**\n\n";
  if (!e.explained()) {
    out << reference_text() << ' ' << kReferenceDocs << "\n";
  } else {
    out << "## What it means\n\n" << e.meaning << "\n\n## Usual causes\n\n";
    for (auto cause : lines_of(e.causes)) out << "- " << cause << '\n';
    if (auto rules = words_of(e.rules); !rules.empty()) {
      out << "\n## Rules to look at\n\n";
      for (auto name : rules) out << "- " << rule_line(name) << '\n';
    }
    out << "\n## What to run next\n\n";
    for (auto step : lines_of(e.next)) out << "- `" << step << "`\n";
  }
  if (!r.notes.empty()) {
    out << '\n';
    for (const auto& note : r.notes) out << "> " << note << '\n';
  }
}

// The catalogue entry, with its header facts (severity, where it is seen)
// under the title, where the markdown does not carry them.
void render_rule_text(std::ostream& out, const Rule& rule, const Style& style) {
  std::string_view md = rule.markdown;
  std::string_view title;
  if (md.starts_with("# ")) {
    const auto end = md.find('\n');
    title = md.substr(0, end == std::string_view::npos ? md.size() : end + 1);
    md.remove_prefix(title.size());
  }
  std::string seen;
  if (rule.is_static) seen += "gpulint (static)";
  if (rule.is_runtime) seen += seen.empty() ? "gpudiag trace (runtime)" : ", gpudiag trace (runtime)";
  out << markdown_for_terminal(title, style.color);
  out << style.bold(rule_tag(rule)) << "  severity: " << to_string(rule.severity) << "  found by: " << seen << '\n';
  out << markdown_for_terminal(md, style.color);
}

}  // namespace

std::optional<Format> parse_format(std::string_view text) {
  if (text == "text") return Format::Text;
  if (text == "markdown" || text == "md") return Format::Markdown;
  if (text == "json") return Format::Json;
  return std::nullopt;
}

nlohmann::json to_json(const LookupResult& r) {
  using nlohmann::json;
  json j;
  switch (r.kind) {
    case LookupResult::Kind::Rule:
      j = {{"kind", "rule"},
           {"id", r.rule->id},
           {"name", r.rule->name},
           {"severity", to_string(r.rule->severity)},
           {"summary", r.rule->summary},
           {"static", r.rule->is_static},
           {"runtime", r.rule->is_runtime},
           {"markdown", r.rule->markdown}};
      return j;
    case LookupResult::Kind::Error: {
      const ErrorEntry& e = *r.error.entry;
      j = {{"kind", "error"},
           {"library", to_string(e.library)},
           {"name", e.name},
           {"code", e.code},
           {"message", e.message},
           {"sticky", e.sticky},
           {"explained", e.explained()}};
      if (!r.error.alias.empty()) j["alias"] = r.error.alias;
      if (e.library == Library::CudaRuntime) {
        if (auto driver = driver_name_for(e.code); !driver.empty()) j["driver_name"] = driver;
      }
      if (e.explained()) {
        j["meaning"] = e.meaning;
        j["causes"] = json::array();
        for (auto c : lines_of(e.causes)) j["causes"].push_back(c);
        j["rules"] = json::array();
        for (auto name : words_of(e.rules)) {
          const Rule* rule = find_rule(name);
          j["rules"].push_back({{"id", rule ? rule->id : ""}, {"name", name}});
        }
        j["next"] = json::array();
        for (auto s : lines_of(e.next)) j["next"].push_back(s);
      } else {
        j["reference"] = kReferenceDocs;
      }
      j["notes"] = r.notes;
      return j;
    }
    case LookupResult::Kind::Ambiguous:
    case LookupResult::Kind::Unknown:
      j = {{"kind", r.kind == LookupResult::Kind::Ambiguous ? "ambiguous" : "unknown"},
           {"candidates", r.candidates},
           {"notes", r.notes}};
      return j;
  }
  return j;
}

void render(std::ostream& out, const LookupResult& result, const RenderOptions& options) {
  if (options.format == Format::Json) {
    out << to_json(result).dump(2) << '\n';
    return;
  }
  if (result.kind == LookupResult::Kind::Rule) {
    if (options.format == Format::Markdown) {
      out << result.rule->markdown;
      if (!result.rule->markdown.ends_with('\n')) out << '\n';
    } else {
      render_rule_text(out, *result.rule, Style{options.color});
    }
    return;
  }
  if (result.kind != LookupResult::Kind::Error) return;
  if (options.format == Format::Markdown) {
    render_error_markdown(out, result);
  } else {
    render_error_text(out, result, Style{options.color});
  }
}

}  // namespace gpudiag::explain
