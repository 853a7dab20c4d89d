// SARIF 2.1.0 for GitHub code scanning and other SARIF viewers. What each
// part holds is documented at to_sarif in emit.h.
#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpudiag/catalogue.h"
#include "gpudiag/emit.h"
#include "sarif_support.h"
#include "source_cache.h"
#include "utf8.h"

namespace gpudiag {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "https://json.schemastore.org/sarif-2.1.0.json";
constexpr std::string_view kBaseId = "SRCROOT";

json text(std::string_view value) { return detail::valid_utf8(value); }
json message(std::string_view value) { return json{{"text", text(value)}}; }

std::string_view level(Severity severity) {
  switch (severity) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: break;
  }
  return "note";
}

// The id a finding is filed under: the catalogue's spelling when it knows it.
std::string canonical_rule_id(const Finding& finding) {
  if (const Rule* rule = find_rule(finding.rule_id); rule != nullptr && !finding.rule_id.empty()) {
    return std::string(rule->id);
  }
  return finding.rule_id.empty() ? std::string("unknown") : detail::valid_utf8(finding.rule_id);
}

json rule_descriptor(const std::string& id, const std::vector<SarifRule>& tool_rules) {
  const Rule* rule = find_rule(id);
  const auto tool_rule =
      std::find_if(tool_rules.begin(), tool_rules.end(), [&](const SarifRule& r) { return r.id == id; });
  if (rule == nullptr && tool_rule != tool_rules.end()) {
    return json{{"id", id},
                {"shortDescription", message(tool_rule->description)},
                {"defaultConfiguration", {{"level", std::string(level(tool_rule->level))}}}};
  }
  if (rule == nullptr) {
    return json{{"id", id},
                {"shortDescription", message("Rule " + id + " (not in this gpudiag's catalogue)")}};
  }
  std::string full = detail::first_paragraph_of_what_goes_wrong(rule->markdown);
  if (full.empty()) full = std::string(rule->summary);
  json tags = json::array({"gpu", "cuda"});
  if (rule->is_static) tags.push_back("static-analysis");
  if (rule->is_runtime) tags.push_back("runtime");
  return json{{"id", std::string(rule->id)},
              {"name", std::string(rule->name)},
              {"shortDescription", message(rule->summary)},
              {"fullDescription", message(full)},
              {"help", {{"text", text(rule->markdown)}, {"markdown", text(rule->markdown)}}},
              {"defaultConfiguration", {{"level", std::string(level(rule->severity))}}},
              {"properties", {{"tags", std::move(tags)}}}};
}

const Frame* innermost_with_file(const std::vector<Frame>& stack) {
  const auto it = std::find_if(stack.begin(), stack.end(), [](const Frame& f) { return !f.file.empty(); });
  return it == stack.end() ? nullptr : &*it;
}

class SarifBuilder {
 public:
  explicit SarifBuilder(const SarifOptions& options)
      : options_(options), base_(detail::normalized_base(options.base_dir)) {}

  json build(std::span<const Finding> findings) {
    std::vector<std::string> ids;
    for (const Finding& finding : findings) ids.push_back(canonical_rule_id(finding));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    json rules = json::array();
    for (const std::string& id : ids) {
      rule_index_[id] = rules.size();
      rules.push_back(rule_descriptor(id, options_.tool_rules));
    }

    json results = json::array();
    for (const Finding& finding : findings) results.push_back(result(finding));

    json driver{{"name", text(options_.tool_name)}, {"rules", std::move(rules)}};
    if (!options_.tool_version.empty()) driver["version"] = text(options_.tool_version);
    if (!options_.information_uri.empty()) driver["informationUri"] = text(options_.information_uri);
    json invocation = this->invocation(driver);

    std::string root = detail::file_uri(base_);
    if (root.back() != '/') root += '/';
    json run{{"tool", {{"driver", std::move(driver)}}},
             {"originalUriBaseIds", {{std::string(kBaseId), {{"uri", root}}}}},
             {"columnKind", "unicodeCodePoints"},
             {"invocations", json::array({std::move(invocation)})},
             {"results", std::move(results)}};
    return json{{"$schema", std::string(kSchema)}, {"version", "2.1.0"}, {"runs", json::array({std::move(run)})}};
  }

 private:
  // The run itself: it completed, and each warning (a condition that limits
  // the results, such as events lost while recording) becomes a notification
  // whose descriptor is listed once in driver.notifications.
  json invocation(json& driver) const {
    json notifications = json::array();
    json descriptors = json::array();
    std::map<std::string, std::size_t> index;
    for (const SarifNotification& w : options_.warnings) {
      const std::string id = w.id.empty() ? std::string("warning") : detail::valid_utf8(w.id);
      if (!index.contains(id)) {
        index[id] = descriptors.size();
        json d{{"id", id}, {"defaultConfiguration", {{"level", "warning"}}}};
        if (!w.description.empty()) d["shortDescription"] = message(w.description);
        descriptors.push_back(std::move(d));
      }
      notifications.push_back(json{{"level", "warning"},
                                   {"message", message(w.message)},
                                   {"descriptor", {{"id", id}, {"index", index[id]}}}});
    }
    json out{{"executionSuccessful", true}};
    if (!notifications.empty()) {
      out["toolExecutionNotifications"] = std::move(notifications);
      driver["notifications"] = std::move(descriptors);
    }
    return out;
  }

  json artifact(std::string_view file) const {
    const detail::ArtifactUri uri = detail::artifact_uri(file, base_);
    json out{{"uri", uri.uri}};
    if (uri.relative) out["uriBaseId"] = std::string(kBaseId);
    return out;
  }

  // Findings count columns in bytes, as clang does; SARIF counts Unicode code
  // points (the run's default columnKind). Convert where the line is readable.
  unsigned code_point_column(std::string_view file, unsigned line, unsigned byte_column) const {
    const auto text = sources_.line(std::string(file), line);
    if (!text || byte_column == 0) return byte_column;
    unsigned column = 1;
    for (std::size_t pos = 0; pos + 1 < byte_column && pos < text->size(); ++column) {
      pos += detail::decode_utf8(*text, pos).length;
    }
    // Past the end of the line: keep the distance beyond it.
    if (byte_column > text->size() + 1) column += byte_column - static_cast<unsigned>(text->size()) - 1;
    return column;
  }

  json physical(std::string_view file, unsigned line, unsigned column) const {
    json out{{"artifactLocation", artifact(file)}};
    if (line != 0) {
      json region{{"startLine", line}};
      if (column != 0) region["startColumn"] = code_point_column(file, line, column);
      out["region"] = std::move(region);
    }
    return out;
  }

  static json function_location(std::string_view name, std::string_view kind) {
    return json::array({json{{"name", text(name)}, {"kind", std::string(kind)}}});
  }

  // Where a runtime stack points: its innermost frame that has a file.
  json stack_location(const std::vector<Frame>& stack) const {
    if (const Frame* frame = innermost_with_file(stack)) {
      json out{{"physicalLocation", physical(frame->file, frame->line, 0)}};
      if (!frame->function.empty()) out["logicalLocations"] = function_location(frame->function, "function");
      return out;
    }
    for (const Frame& frame : stack) {
      if (!frame.function.empty()) return json{{"logicalLocations", function_location(frame.function, "function")}};
    }
    for (const Frame& frame : stack) {
      if (!frame.module.empty()) return json{{"logicalLocations", function_location(frame.module, "module")}};
    }
    return json{{"logicalLocations", json::array({json{{"name", "(unknown location)"}}})}};
  }

  json sarif_stack(std::string_view what, const std::vector<Frame>& frames) const {
    json list = json::array();
    for (const Frame& frame : frames) {
      json location = json::object();
      json phys = json::object();
      if (!frame.file.empty()) phys = physical(frame.file, frame.line, 0);
      if (frame.address != 0) phys["address"] = json{{"absoluteAddress", frame.address}};
      if (!phys.empty()) location["physicalLocation"] = std::move(phys);
      if (!frame.function.empty()) location["logicalLocations"] = function_location(frame.function, "function");
      json f{{"location", std::move(location)}};
      if (!frame.module.empty()) f["module"] = text(frame.module);
      list.push_back(std::move(f));
    }
    return json{{"message", message(what)}, {"frames", std::move(list)}};
  }

  // primaryLocationLineHash as documented in emit.h.
  std::string fingerprint(const std::string& rule_id, const Finding& finding) {
    std::string file;
    unsigned line = 0;
    std::string function;
    if (finding.location.known()) {
      file = finding.location.file, line = finding.location.line;
    } else if (const Frame* frame = innermost_with_file(finding.stack)) {
      file = frame->file, line = frame->line, function = frame->function;
    } else if (!finding.stack.empty()) {
      function = finding.stack.front().function;
    }
    std::string key = rule_id;
    key += '\0';
    if (!file.empty()) key += detail::artifact_uri(file, base_).uri;
    key += '\0';
    key += function;
    key += '\0';
    const auto source = sources_.line(file, line);
    key += source ? "line:" + detail::normalized_line(*source) : "message:" + detail::normalized_message(finding.message);
    const std::string hash = fmt::format("{:016x}", detail::fnv1a64(key));
    return fmt::format("{}:{}", hash, ++occurrences_[hash]);
  }

  json result(const Finding& finding) {
    const std::string id = canonical_rule_id(finding);
    std::string text_of_message = finding.message;
    json out{{"ruleId", id}, {"ruleIndex", rule_index_.at(id)}, {"level", std::string(level(finding.severity))}};

    json location = finding.location.known()
                        ? json{{"physicalLocation", physical(finding.location.file, finding.location.line,
                                                             finding.location.column)}}
                        : stack_location(finding.stack);
    out["locations"] = json::array({std::move(location)});

    json stacks = json::array();
    if (!finding.stack.empty()) stacks.push_back(sarif_stack(finding.message, finding.stack));
    json related = json::array();
    for (const Note& note : finding.notes) {
      const bool has_file = note.location.known() || innermost_with_file(note.stack) != nullptr;
      if (has_file) {
        json rel = note.location.known()
                       ? json{{"physicalLocation", physical(note.location.file, note.location.line, note.location.column)}}
                       : stack_location(note.stack);
        rel["id"] = related.size() + 1;
        rel["message"] = message(note.message);
        related.push_back(std::move(rel));
      }
      if (!note.stack.empty()) stacks.push_back(sarif_stack(note.message, note.stack));
      // A note with neither place nor stack would be lost: keep it in the message.
      if (!has_file && note.stack.empty()) text_of_message += "\nnote: " + note.message;
    }
    out["message"] = message(text_of_message);
    if (!related.empty()) out["relatedLocations"] = std::move(related);
    if (!stacks.empty()) out["stacks"] = std::move(stacks);
    if (finding.fix && finding.fix->begin.known() && finding.fix->begin.line != 0) out["fixes"] = fix(*finding.fix);
    out["partialFingerprints"] = json{{"primaryLocationLineHash", fingerprint(id, finding)}};
    return out;
  }

  json fix(const FixIt& fix) const {
    const SourceLocation& end = fix.end.line != 0 ? fix.end : fix.begin;
    json region{{"startLine", fix.begin.line}, {"endLine", end.line}};
    if (fix.begin.column != 0) region["startColumn"] = code_point_column(fix.begin.file, fix.begin.line, fix.begin.column);
    if (end.column != 0) region["endColumn"] = code_point_column(fix.begin.file, end.line, end.column);
    json replacement{{"deletedRegion", std::move(region)}, {"insertedContent", {{"text", text(fix.replacement)}}}};
    json change{{"artifactLocation", artifact(fix.begin.file)}, {"replacements", json::array({std::move(replacement)})}};
    return json::array({json{{"description", message("Replace with '" + fix.replacement + "'")},
                             {"artifactChanges", json::array({std::move(change)})}}});
  }

  const SarifOptions& options_;
  std::filesystem::path base_;
  mutable detail::SourceCache sources_;  // lines are read lazily by const helpers
  std::map<std::string, std::size_t> rule_index_;
  std::map<std::string, unsigned> occurrences_;
};

}  // namespace

nlohmann::json to_sarif(std::span<const Finding> findings, const SarifOptions& options) {
  return SarifBuilder(options).build(findings);
}

void emit_sarif(std::ostream& out, std::span<const Finding> findings, const SarifOptions& options) {
  out << to_sarif(findings, options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace gpudiag
