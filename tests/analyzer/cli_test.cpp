// The gpulint command line: exit codes, formats, compilation databases,
// configuration files, suppressions and header filtering.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpudiag/catalogue.h"
#include "run_gpulint.h"

namespace gpudiag::lint::test {
namespace {

const char* kBug = R"(#include <cuda_runtime.h>
void leak_status(float* d) {
  cudaFree(d);
}
)";

const char* kClean = R"(#include <cuda_runtime.h>
#include <cstdlib>
void fine(float* d) {
  if (cudaFree(d) != cudaSuccess) abort();
}
)";

TEST(Cli, ExitCodes) {
  const std::string dir = temp_dir("exit");
  write_file(dir + "/bug.cu", kBug);
  write_file(dir + "/clean.cu", kClean);
  EXPECT_EQ(run_gpulint({dir + "/clean.cu"}).exit_code, 0);
  EXPECT_EQ(run_gpulint({dir + "/bug.cu"}).exit_code, 1);
  EXPECT_EQ(run_gpulint({"--fail-on=error", dir + "/bug.cu"}).exit_code, 0);  // GD006 is a warning
  const LintRun missing = run_gpulint({dir + "/missing.cu"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no such file"), std::string::npos);
  const LintRun no_db = run_gpulint({"-p", dir, dir + "/bug.cu"});
  EXPECT_EQ(no_db.exit_code, 2);
  EXPECT_NE(no_db.err.find("compilation database"), std::string::npos);
  EXPECT_EQ(run_gpulint({"--format=yaml", dir + "/bug.cu"}).exit_code, 2);
  EXPECT_EQ(run_gpulint({}).exit_code, 2);
}

// GD006's message says why a checked synchronisation does not check a
// launch, and tells the launch that nothing checks apart.
TEST(Cli, LaunchCheckedOnlyBySynchronisationIsToldApart) {
  const std::string dir = temp_dir("launch-sync");
  write_file(dir + "/launch.cu", R"(#include <cuda_runtime.h>
#include <cstdlib>
__global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }
void synchronised(float* d) {
  fill<<<1, 4096>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) std::abort();
}
void unchecked(float* d) {
  fill<<<1, 256>>>(d);
}
)");
  const LintRun run = run_gpulint({dir + "/launch.cu"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("launch.cu:5:3: warning: the launch of kernel 'fill' is checked only by a later "
                         "synchronisation"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("launch.cu:9:3: warning: the launch of kernel 'fill' is never checked"), std::string::npos)
      << run.out;
}

// GD003's message for memory a kernel writes names the launch's kernel, the
// memory and its stream, and says when the kernel's body is not in the file
// (then only its parameter types say what it writes).
TEST(Cli, KernelWriterSaysWhenItsBodyIsNotSeen) {
  const std::string dir = temp_dir("kernel-writer");
  write_file(dir + "/writer.cu", R"(#include <cuda_runtime.h>
__global__ void seen(float* out) { out[threadIdx.x] = 1.0f; }
__global__ void unseen(float* out);
float read_early(float* m, cudaStream_t s) {
  cudaMallocManaged(&m, 1024);
  seen<<<1, 256, 0, s>>>(m);
  float first = m[0];
  unseen<<<1, 256, 0, s>>>(m);
  return first + m[1];
}
)");
  const LintRun run = run_gpulint({"--checks=-*,GD003", dir + "/writer.cu"});
  EXPECT_NE(run.out.find("writer.cu:7:17: error: 'm' (managed memory) is read on the host while kernel 'seen', "
                         "launched on 's', may still be writing it"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("writer.cu:9:18: error: 'm' (managed memory) is read on the host while kernel 'unseen'"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("('unseen' has no body in this file: it is taken to write through its non-const pointer "
                         "parameters)"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("('seen' has no body"), std::string::npos) << run.out;
}

TEST(Cli, TextJsonSarif) {
  const std::string dir = temp_dir("formats");
  write_file(dir + "/bug.cu", kBug);
  const LintRun text = run_gpulint({dir + "/bug.cu"});
  EXPECT_NE(text.out.find("bug.cu:3:3: warning:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GD006"), std::string::npos);
  const LintRun json = run_gpulint({"--format=json", dir + "/bug.cu"});
  EXPECT_EQ(count_rule(json.out, "GD006"), 1u);
  const LintRun sarif = run_gpulint({"--format=sarif", "-o", dir + "/out.sarif", dir + "/bug.cu"});
  EXPECT_EQ(sarif.exit_code, 1);
  std::ifstream in(dir + "/out.sarif");
  const auto log = nlohmann::json::parse(in);
  EXPECT_EQ(log.at("version"), "2.1.0");
  EXPECT_EQ(log.at("runs")[0].at("tool").at("driver").at("name"), "gpulint");
  EXPECT_EQ(log.at("runs")[0].at("results").size(), 1u);
}

// A launch in a generic lambda is one finding (the instantiation's), not a
// second one for the uninstantiated pattern (seen on llm.c's dispatch helpers).
TEST(Cli, TemplateLaunchReportedOnce) {
  const LintRun run =
      run_gpulint({"--format=json", std::string(GPULINT_SNIPPETS) + "/unchecked-cuda-error/generic-lambdas.cu"});
  EXPECT_EQ(count_rule(run.out, "GD006"), 1u) << run.out;
}

// The catalogue drives the list: every rule gpulint can see in source has the
// check of its id and name, and every registered check is a static rule's.
TEST(Cli, ListRulesHasACheckForEveryStaticRuleOfTheCatalogue) {
  const LintRun run = run_gpulint({"--list-rules"});
  EXPECT_EQ(run.exit_code, 0);
  std::size_t checks = 0;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line); ++checks) {
    const std::string id = line.substr(0, line.find(' '));
    const Rule* rule = find_rule(id);
    ASSERT_NE(rule, nullptr) << line;
    EXPECT_TRUE(line.starts_with(std::string(rule->id) + "  " + std::string(rule->name) + "  ")) << line;
    EXPECT_TRUE(rule->is_static) << line;
  }
  std::size_t static_rules = 0;
  for (const Rule& r : catalogue()) {
    if (!r.is_static) continue;
    ++static_rules;
    EXPECT_NE(run.out.find(std::string(r.id) + "  " + std::string(r.name) + "  "), std::string::npos) << r.id;
  }
  EXPECT_EQ(checks, static_rules);
}

TEST(Cli, ChecksGlobsSelect) {
  const std::string dir = temp_dir("globs");
  write_file(dir + "/bug.cu", kBug);
  EXPECT_EQ(run_gpulint({"--checks=-*,premature-free", dir + "/bug.cu"}).exit_code, 0);
  EXPECT_EQ(run_gpulint({"--checks=-*,GD006", dir + "/bug.cu"}).exit_code, 1);
}

TEST(Cli, ConfigFoundUpwardAndExplicit) {
  const std::string dir = temp_dir("config");
  write_file(dir + "/src/deep/bug.cu", kBug);
  write_file(dir + "/.gpulint.yaml", "Checks: '*'\nSeverity:\n  unchecked-cuda-error: error\n");
  const LintRun upgraded = run_gpulint({"--format=json", "--fail-on=error", dir + "/src/deep/bug.cu"});
  EXPECT_EQ(upgraded.exit_code, 1);
  EXPECT_NE(upgraded.out.find("\"severity\": \"error\""), std::string::npos);
  write_file(dir + "/off.yaml", "Checks: '-GD006'\n");
  EXPECT_EQ(run_gpulint({"--config", dir + "/off.yaml", dir + "/src/deep/bug.cu"}).exit_code, 0);
  write_file(dir + "/bad.yaml", "Checks: [\n");
  const LintRun bad = run_gpulint({"--config", dir + "/bad.yaml", dir + "/src/deep/bug.cu"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.yaml"), std::string::npos);
}

// Files are not checked with the defaults in place of a config that cannot be
// read: the run stops before any file is analysed.
TEST(Cli, ABrokenConfigStopsTheRunBeforeAnyFileIsAnalysed) {
  const std::string dir = temp_dir("config-broken");
  write_file(dir + "/bug.cu", kBug);
  write_file(dir + "/sub/bug.cu", kBug);
  write_file(dir + "/sub/.gpulint.yaml", "Checks: [\n");
  const LintRun run = run_gpulint({dir + "/bug.cu", dir + "/sub/bug.cu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(dir + "/sub/.gpulint.yaml: invalid .gpulint.yaml"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(Cli, ExtraArgsFromConfig) {
  const std::string dir = temp_dir("extra");
  write_file(dir + "/k.cu", "#ifndef NEEDED\n#error NEEDED must be defined\n#endif\nvoid f() {}\n");
  const LintRun without = run_gpulint({"--format=json", dir + "/k.cu"});
  EXPECT_EQ(count_rule(without.out, "clang-diagnostic-error"), 1u);
  write_file(dir + "/.gpulint.yaml", "ExtraArgs: ['-DNEEDED']\n");
  const LintRun with = run_gpulint({"--format=json", dir + "/k.cu"});
  EXPECT_EQ(count_rule(with.out, "clang-diagnostic-error"), 0u) << with.out;
}

TEST(Cli, NolintComments) {
  const std::string dir = temp_dir("nolint");
  write_file(dir + "/k.cu", R"(#include <cuda_runtime.h>
void f(float* d, float* e, float* g) {
  cudaFree(d);  // NOLINT(unchecked-cuda-error)
  // NOLINTNEXTLINE(GD006)
  cudaFree(e);
  // NOLINTBEGIN(GD006)
  cudaFree(g);
  // NOLINTEND(GD006)
  cudaFree(nullptr);
}
)");
  const LintRun run = run_gpulint({"--format=json", dir + "/k.cu"});
  ASSERT_EQ(count_rule(run.out, "GD006"), 1u) << run.out;
  EXPECT_EQ(nlohmann::json::parse(run.out)["findings"][0]["location"]["line"], 9);
}

TEST(Cli, HeadersAreFilteredUnlessConfigured) {
  const std::string dir = temp_dir("headers");
  write_file(dir + "/include/helpers.cuh", "#include <cuda_runtime.h>\ninline void h(float* d) { cudaFree(d); }\n");
  write_file(dir + "/k.cu", "#include \"include/helpers.cuh\"\nvoid f() {}\n");
  EXPECT_EQ(count_rule(run_gpulint({"--format=json", dir + "/k.cu"}).out, "GD006"), 0u);
  write_file(dir + "/.gpulint.yaml", "HeaderFilterRegex: 'include/.*'\n");
  EXPECT_EQ(count_rule(run_gpulint({"--format=json", dir + "/k.cu"}).out, "GD006"), 1u);
}

TEST(Cli, CompilationDatabaseWithNvccEntries) {
  const std::string dir = temp_dir("db");
  write_file(dir + "/src/k.cu", "#ifndef FROM_DB\n#error needs the database\n#endif\n" + std::string(kBug));
  write_file(dir + "/src/other.cu", kClean);
  write_file(dir + "/build/compile_commands.json", R"([
  {"directory": ")" + dir + R"(/build",
   "command": "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFROM_DB -I)" + dir +
                                                          R"(/src --generate-code=arch=compute_80,code=[compute_80,sm_80] -Xcompiler=-fPIC -x cu -c )" +
                                                          dir + R"(/src/k.cu -o k.o",
   "file": ")" + dir + R"(/src/k.cu"},
  {"directory": ")" + dir + R"(/build",
   "arguments": ["nvcc", "-O3", "-arch=sm_86", "-Xcompiler", "-fopenmp", "-c", "../src/other.cu", "-o", "other.o"],
   "file": "../src/other.cu"}
])");
  const LintRun all = run_gpulint({"-p", dir + "/build", "--format=json", "-j", "2"});
  EXPECT_EQ(all.exit_code, 1) << all.err;
  EXPECT_EQ(count_rule(all.out, "clang-diagnostic-error"), 0u) << all.out;
  EXPECT_EQ(count_rule(all.out, "GD006"), 1u) << all.out;
  const LintRun folder = run_gpulint({"-p", dir + "/build", "--format=json", dir + "/src"});
  EXPECT_EQ(count_rule(folder.out, "GD006"), 1u) << folder.out;
}

}  // namespace
}  // namespace gpudiag::lint::test
