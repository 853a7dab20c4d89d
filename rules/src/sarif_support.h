// Pieces of the SARIF emitter that have rules of their own: artifact URIs
// (RFC 3986) and the stable fingerprint of a result.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpudiag::detail {

// Percent-encodes every byte of `path` except RFC 3986 unreserved characters
// (A-Z a-z 0-9 - . _ ~) and '/'.
std::string percent_encode_path(std::string_view path);

// file:///abs/path for an absolute path (percent-encoded).
std::string file_uri(const std::filesystem::path& absolute);

struct ArtifactUri {
  std::string uri;
  bool relative = false;  // relative to the SRCROOT base
};

// `file` (absolute, or relative to the working directory) as a URI relative
// to `base` (absolute, lexically normal, no trailing slash) when it lies
// inside it, else as an absolute file:// URI. Purely lexical: no file system
// access, so the same finding gives the same URI everywhere.
ArtifactUri artifact_uri(std::string_view file, const std::filesystem::path& base);

// The base directory as used by artifact_uri: absolute, normal, no trailing slash.
std::filesystem::path normalized_base(std::string_view base_dir);

// 64-bit FNV-1a: small, fast and fixed forever (fingerprints must not change
// between releases).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ull);

// What the fingerprint hashes for a located line: the text without any
// whitespace, so re-indenting does not change it.
std::string normalized_line(std::string_view line);

// What it hashes when no line is readable: the message with hex numbers and
// digit runs blanked out, whitespace collapsed (addresses, sizes and counts
// differ between runs of the same bug).
std::string normalized_message(std::string_view message);

// The first paragraph under "## What goes wrong" of a catalogue entry, joined
// into one line; empty when there is none.
std::string first_paragraph_of_what_goes_wrong(std::string_view markdown);

}  // namespace gpudiag::detail
