// The CUPTI injection library loads wherever the CUDA driver loads it: with
// dlopen into a process that never linked it (a C program, Python), without
// static TLS, and InitializeInjection returns cleanly where no driver is.
// No GPU needed. gpudiag's own check of it (doctor, trace) tells a library
// that loads from one that does not, with the loader's reason.
#include <dlfcn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "gpudiag/doctor/injection.h"
#include "gpudiag/import/load_trace.h"
#include "gpudiag/trace_io.h"
#include "test_support.h"

namespace gpudiag {
namespace {

// Runs argv with extra environment, capturing stdout; returns {exit status, output}.
std::pair<int, std::string> run_capturing(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  const std::string out = test::temp_path("stdout.txt");
  std::vector<std::string> shell = {"/bin/sh", "-c", "exec \"$@\" >" + out, "sh"};
  shell.insert(shell.end(), argv.begin(), argv.end());
  const int status = test::run(shell, env);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), test::read_file(out)};
}

TEST(InjectionLoad, ACProgramThatNeverLinkedItLoadsItWithoutStaticTls) {
  const auto [status, out] = run_capturing({DLOPEN_INJECTION, GPUDIAG_CUPTI_LIBRARY});
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("loaded"), std::string::npos) << out;
}

TEST(InjectionLoad, PythonLoadsItAndFindsInitializeInjection) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const auto [status, out] = run_capturing(
      {"/usr/bin/python3", "-c",
       "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); print('found' if lib.InitializeInjection else 'missing')",
       GPUDIAG_CUPTI_LIBRARY});
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("found"), std::string::npos) << out;
}

TEST(InjectionLoad, InitializeInjectionWithoutTracingReturnsSuccess) {
  const auto [status, out] = run_capturing({DLOPEN_INJECTION, GPUDIAG_CUPTI_LIBRARY, "call"});
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("InitializeInjection returned 1"), std::string::npos) << out;
}

TEST(InjectionLoad, InitializeInjectionWhileTracingReturnsCleanlyWhereverItRuns) {
  const std::string trace = test::temp_path("injection.gdtrace");
  const auto [status, out] = run_capturing({DLOPEN_INJECTION, GPUDIAG_CUPTI_LIBRARY, "call"}, {"GPUDIAG_TRACE=" + trace});
  EXPECT_EQ(status, 0) << out;
  // Without a driver CUPTI cannot trace and it says so (0); with one it traces (1).
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  const std::string expected = driver ? "InitializeInjection returned 1" : "InitializeInjection returned 0";
  if (driver) dlclose(driver);
  EXPECT_NE(out.find(expected), std::string::npos) << out;
  const Trace t = load_trace(trace);
  EXPECT_TRUE(t.stopped_cleanly);
}

// `gpudiag trace` names the library for NVTX too: a program's NVTX calls go
// through its InitializeInjectionNvtx2, traced or not, driver or none, and
// the program runs as it does without it.
TEST(InjectionLoad, NvtxLoadsItAndTheProgramRunsTheSame) {
  void* handle = dlopen(GPUDIAG_CUPTI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_NE(dlsym(handle, "InitializeInjectionNvtx2"), nullptr);
  dlclose(handle);
  const auto plain = run_capturing({NVTX_PROGRAM});
  ASSERT_EQ(plain.first, 0) << plain.second;
  EXPECT_EQ(plain.second, "3 steps\n");
  const std::string nvtx = std::string("NVTX_INJECTION64_PATH=") + GPUDIAG_CUPTI_LIBRARY;
  EXPECT_EQ(run_capturing({NVTX_PROGRAM}, {nvtx}), plain) << "untraced";
  const std::string trace = test::temp_path("nvtx.gdtrace");
  EXPECT_EQ(run_capturing({NVTX_PROGRAM}, {nvtx, "GPUDIAG_TRACE=" + trace}), plain) << "traced";
  EXPECT_TRUE(load_trace(trace).stopped_cleanly);
}

TEST(InjectionLoad, TheCheckTellsALoadableLibraryFromOnesThatAreNot) {
  EXPECT_TRUE(doctor::check_injection_library(GPUDIAG_CUPTI_LIBRARY).loaded);

  const std::string garbage = test::temp_path("libgarbage.so");
  test::write_file(garbage, "not an ELF file at all");
  const doctor::LibraryInfo bad = doctor::check_injection_library(garbage);
  EXPECT_FALSE(bad.loaded);
  EXPECT_NE(bad.load_error.find(garbage), std::string::npos) << bad.load_error;

  const doctor::LibraryInfo missing = doctor::check_injection_library("/nonexistent/libgpudiag_cupti.so");
  EXPECT_FALSE(missing.loaded);
  EXPECT_NE(missing.load_error.find("No such file"), std::string::npos) << missing.load_error;

  const doctor::LibraryInfo not_injection = doctor::check_injection_library(GPUDIAG_RECORD_LIBRARY);
  EXPECT_FALSE(not_injection.loaded);
  EXPECT_NE(not_injection.load_error.find("InitializeInjection"), std::string::npos) << not_injection.load_error;
}

}  // namespace
}  // namespace gpudiag
