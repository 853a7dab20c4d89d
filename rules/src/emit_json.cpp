// gpudiag's own JSON schema for findings (documented in emit.h). Stable:
// fields are added, never renamed; absent parts are omitted.
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "utf8.h"

namespace gpudiag {
namespace {

using nlohmann::json;

// Findings carry raw bytes from sources and symbol tables; keep the JSON
// value itself valid so that any dump() of it works.
json text(std::string_view value) { return detail::valid_utf8(value); }

json location_json(const SourceLocation& location) {
  json out = json::object();
  out["file"] = text(location.file);
  if (location.line != 0) out["line"] = location.line;
  if (location.column != 0) out["column"] = location.column;
  return out;
}

json stack_json(const std::vector<Frame>& frames) {
  json out = json::array();
  for (const Frame& frame : frames) {
    json f = json::object();
    // A string: 64-bit addresses do not survive JSON readers that use doubles.
    f["address"] = fmt::format("0x{:x}", frame.address);
    if (!frame.function.empty()) f["function"] = text(frame.function);
    if (!frame.file.empty()) f["file"] = text(frame.file);
    if (frame.line != 0) f["line"] = frame.line;
    if (!frame.module.empty()) f["module"] = text(frame.module);
    out.push_back(std::move(f));
  }
  return out;
}

SourceLocation location_from_json(const json& j) {
  return {.file = j.at("file").get<std::string>(), .line = j.value("line", 0u), .column = j.value("column", 0u)};
}

std::vector<Frame> stack_from_json(const json& j) {
  std::vector<Frame> frames;
  for (const json& f : j) {
    Frame frame;
    frame.address = std::stoull(f.value("address", std::string("0x0")), nullptr, 16);
    frame.function = f.value("function", std::string());
    frame.file = f.value("file", std::string());
    frame.line = f.value("line", 0u);
    frame.module = f.value("module", std::string());
    frames.push_back(std::move(frame));
  }
  return frames;
}

}  // namespace

Finding finding_from_json(const json& j) {
  Finding f;
  f.rule_id = j.at("rule").get<std::string>();
  const auto severity = parse_severity(j.at("severity").get<std::string>());
  if (!severity) throw json::other_error::create(501, "a finding's severity is note, warning or error", &j);
  f.severity = *severity;
  f.message = j.at("message").get<std::string>();
  if (j.contains("location")) f.location = location_from_json(j["location"]);
  if (j.contains("stack")) f.stack = stack_from_json(j["stack"]);
  if (j.contains("notes"))
    for (const json& n : j["notes"]) {
      Note note;
      note.message = n.at("message").get<std::string>();
      if (n.contains("location")) note.location = location_from_json(n["location"]);
      if (n.contains("stack")) note.stack = stack_from_json(n["stack"]);
      f.notes.push_back(std::move(note));
    }
  if (j.contains("fix")) {
    const json& x = j["fix"];
    f.fix = FixIt{.begin = location_from_json(x.at("begin")), .end = location_from_json(x.at("end")),
                  .replacement = x.at("replacement").get<std::string>()};
  }
  return f;
}

json to_json(const Finding& finding) {
  json out = json::object();
  out["rule"] = text(finding.rule_id);
  if (const Rule* rule = find_rule(finding.rule_id); rule != nullptr && !finding.rule_id.empty()) {
    out["name"] = std::string(rule->name);
  }
  out["severity"] = std::string(to_string(finding.severity));
  out["message"] = text(finding.message);
  if (finding.location.known()) out["location"] = location_json(finding.location);
  if (!finding.stack.empty()) out["stack"] = stack_json(finding.stack);
  if (!finding.notes.empty()) {
    json notes = json::array();
    for (const Note& note : finding.notes) {
      json n = json::object();
      n["message"] = text(note.message);
      if (note.location.known()) n["location"] = location_json(note.location);
      if (!note.stack.empty()) n["stack"] = stack_json(note.stack);
      notes.push_back(std::move(n));
    }
    out["notes"] = std::move(notes);
  }
  if (finding.fix) {
    json fix = json::object();
    fix["begin"] = location_json(finding.fix->begin);
    const SourceLocation& end = finding.fix->end.line != 0 ? finding.fix->end : finding.fix->begin;
    json end_json = location_json(end);
    if (end.file.empty()) end_json["file"] = text(finding.fix->begin.file);
    fix["end"] = std::move(end_json);
    fix["replacement"] = text(finding.fix->replacement);
    out["fix"] = std::move(fix);
  }
  return out;
}

json to_json(std::span<const Finding> findings) {
  json list = json::array();
  for (const Finding& finding : findings) list.push_back(to_json(finding));
  json out = json::object();
  out["findings"] = std::move(list);
  return out;
}

void emit_json(std::ostream& out, std::span<const Finding> findings) {
  // The values are already valid UTF-8; `replace` is the second guard.
  out << to_json(findings).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace gpudiag
