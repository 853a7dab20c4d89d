// Turns what the probe saw into a verdict and problems with fixes. The
// verdict's reason is the first thing that stops CUDA from working, in the
// order CUDA itself meets them: driver, cuInit, devices, versions.
#include <fmt/format.h>

#include "gpudiag/doctor/report.h"
#include "gpudiag/explain/knowledge.h"

namespace gpudiag::doctor {
namespace {

using Severity = Problem::Severity;

constexpr std::string_view kEmuNote =
    "gdrt's emulated GPU is available instead: GDRT_DEVICE=emu runs the same training code with GPU "
    "semantics (device memory the host cannot touch, asynchronous streams, a memory capacity) on the CPU.";

std::string driver_code_name(int code) {
  auto name = explain::driver_name_for(code);
  return name.empty() ? fmt::format("CUresult {}", code) : std::string(name);
}

std::string upgrade_advice(int runtime_major) {
  auto branch = minimum_driver_branch(runtime_major);
  if (branch.empty()) return fmt::format("upgrade the NVIDIA driver to one that supports CUDA {}", runtime_major);
  return fmt::format("upgrade the NVIDIA driver to R{} or newer (the first driver branch for CUDA {}.x)", branch,
                     runtime_major);
}

// "R580 or newer for CUDA 13", for the runtime gpudiag uses.
std::string driver_for_runtime(const Facts& f) {
  const long long runtime = f.cuda_runtime.version > 0 ? f.cuda_runtime.version : f.built_runtime_version;
  const int major = cuda_major(runtime);
  auto branch = minimum_driver_branch(major);
  if (branch.empty()) return "a current release";
  return fmt::format("R{} or newer for CUDA {}", branch, major);
}

void explain_init_failure(const Facts& f, const VisibleDevices& visible, Report& r) {
  const int code = *f.driver.init_result;
  const std::string name = driver_code_name(code);
  const explain::ErrorEntry* entry = explain::find_cuda_driver_error(code);
  const std::string message = entry && !entry->message.empty() ? fmt::format(": {}", entry->message) : "";
  Problem p;
  p.title = fmt::format("cuInit failed with {} ({}){}", name, code, message);
  p.detail = entry && entry->explained() ? std::string(entry->meaning) : "The driver could not be initialised.";
  if (code == 100 && visible.hides_all) {
    r.verdict = fmt::format("No usable GPU: {} (cuInit returned {}).", visible.description, name);
    p.fix = "unset CUDA_VISIBLE_DEVICES, or set it to the GPUs to use (CUDA_VISIBLE_DEVICES=0)";
  } else {
    r.verdict = fmt::format("No usable GPU: the NVIDIA driver is installed but cuInit failed with {} ({}){}.", name,
                            code, message);
    switch (code) {
      case 100:
        p.fix = "run nvidia-smi: if it sees no GPU either, check that the GPU is seated and powered and look for Xid "
                "errors in dmesg; in a container, start it with --gpus all";
        break;
      case 34:
        p.fix = fmt::format("{} is the toolkit's stub library: remove its folder (lib64/stubs) from LD_LIBRARY_PATH",
                            f.driver.library);
        break;
      case 35:
      case 803:
        p.fix = "reboot if the driver was upgraded (the kernel module and libcuda must be the same version); check "
                "cat /proc/driver/nvidia/version against nvidia-smi";
        break;
      default:
        p.fix = entry ? fmt::format("gpudiag explain {} lists its causes and what to run next", name)
                      : "run nvidia-smi and check dmesg for driver errors";
    }
  }
  r.problems.push_back(p);
}

// Compares one CUDA runtime (built-in or loadable) with the driver.
void check_runtime_against_driver(const Facts& f, long long runtime, std::string_view what, Report& r) {
  if (runtime <= 0 || f.driver.version <= 0) return;
  const std::string rt = cuda_version_string(runtime);
  const std::string drv = cuda_version_string(f.driver.version);
  if (cuda_major(f.driver.version) < cuda_major(runtime)) {
    r.gpu_usable = false;
    r.problems.push_back({Severity::Error,
                          fmt::format("{} is CUDA {}, newer than the driver supports (CUDA {})", what, rt, drv),
                          "Every CUDA call fails with cudaErrorInsufficientDriver (35): \"CUDA driver version is "
                          "insufficient for CUDA runtime version\".",
                          fmt::format("{}; or use a build for CUDA {}.x", upgrade_advice(cuda_major(runtime)),
                                      cuda_major(f.driver.version))});
  } else if (f.driver.version < runtime) {
    r.problems.push_back(
        {Severity::Warning, fmt::format("{} is CUDA {}, newer than the driver's CUDA {}", what, rt, drv),
         "It runs under minor version compatibility, but PTX that needs JIT compilation fails with "
         "cudaErrorUnsupportedPtxVersion (222) and newer APIs with cudaErrorCallRequiresNewerDriver (36).",
         fmt::format("upgrade the NVIDIA driver to one that supports CUDA {}", rt)});
  }
}

void check_libraries(const Facts& f, Report& r) {
  const long long runtime = f.cuda_runtime.version > 0 ? f.cuda_runtime.version : f.built_runtime_version;
  if (f.built_runtime_version > 0 && !f.cuda_runtime.loaded) {
    r.problems.push_back({Severity::Warning,
                          fmt::format("libcudart.so.{} (CUDA {}) is not loadable", cuda_major(f.built_runtime_version),
                                      cuda_version_string(f.built_runtime_version)),
                          "gdrt's cuda device and gpudiag's CUPTI library need the CUDA runtime at run time.",
                          "add the toolkit's lib64 folder to LD_LIBRARY_PATH (export "
                          "LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH) or run ldconfig"});
  }
  if (!f.cudnn.loaded) {
    r.problems.push_back({Severity::Warning, "cuDNN not found (libcudnn.so.9)",
                          "gdrt's cuda device runs convolutions through cuDNN.",
                          fmt::format("install cuDNN 9 for CUDA {} (Debian/Ubuntu package libcudnn9-cuda-{}) or add its "
                                      "folder to LD_LIBRARY_PATH",
                                      runtime > 0 ? std::to_string(cuda_major(runtime)) : std::string("13"),
                                      runtime > 0 ? std::to_string(cuda_major(runtime)) : std::string("13"))});
  } else if (f.cudnn.cudart_version > 0 && runtime > 0 && cuda_major(f.cudnn.cudart_version) != cuda_major(runtime)) {
    r.problems.push_back(
        {Severity::Error,
         fmt::format("cuDNN {} was built for CUDA {}.x but the CUDA runtime is {}", cudnn_version_string(f.cudnn.version),
                     cuda_major(f.cudnn.cudart_version), cuda_version_string(runtime)),
         "cuDNN calls fail (CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART, or CUDNN_STATUS_NOT_INITIALIZED at "
         "cudnnCreate).",
         fmt::format("install the cuDNN build for CUDA {0} (libcudnn9-cuda-{0}) and remove the other one from the "
                     "library path ({1})",
                     cuda_major(runtime), f.cudnn.library)});
  }
  if (!f.cupti.loaded) {
    r.problems.push_back({Severity::Warning, "CUPTI not found (libcupti.so)",
                          "gpudiag trace records kernels and copies on a real GPU through CUPTI.",
                          "install the toolkit's CUPTI (extras/CUPTI) and add its lib64 folder to LD_LIBRARY_PATH"});
  }
  // Built with CUDA (something was tried) but the driver would fail to load it.
  if (!f.injection_library.tried.empty() && !f.injection_library.loaded) {
    r.problems.push_back({Severity::Error,
                          fmt::format("gpudiag's CUPTI injection library does not load: {}", f.injection_library.load_error),
                          "the CUDA driver loads it with dlopen and ignores a failure: gpudiag trace would record no "
                          "CUDA activity at all.",
                          f.cupti.loaded ? "reinstall gpudiag, or point GPUDIAG_CUPTI_LIBRARY at a libgpudiag_cupti.so "
                                           "that loads"
                                         : "make libcupti.so loadable (see the CUPTI problem above), then check again"});
  }
}

// A CUDA major has no code for GPUs older than its minimum architecture:
// kernels fail with cudaErrorNoKernelImageForDevice (209).
void check_architectures(const Facts& f, Report& r) {
  const long long runtime = f.cuda_runtime.version > 0 ? f.cuda_runtime.version : f.built_runtime_version;
  const int minimum = minimum_compute_capability(cuda_major(runtime));
  if (runtime <= 0 || minimum == 0) return;
  std::size_t unsupported = 0;
  for (const auto& d : f.driver.devices) {
    if (d.cc_major * 10 + d.cc_minor >= minimum) continue;
    ++unsupported;
    r.problems.push_back(
        {Severity::Error,
         fmt::format("cuda:{} ({}, compute capability {}.{}) is older than CUDA {}.x supports", d.ordinal, d.name,
                     d.cc_major, d.cc_minor, cuda_major(runtime)),
         fmt::format("CUDA {}.x and its libraries have no code below compute capability {}.{}; kernels fail with "
                     "cudaErrorNoKernelImageForDevice (209).",
                     cuda_major(runtime), minimum / 10, minimum % 10),
         fmt::format("use a CUDA version that still supports this GPU (CUDA 12.x supports compute capability 5.0 "
                     "and newer), or a newer GPU{}",
                     f.driver.devices.size() > 1 ? "; select a supported GPU with CUDA_VISIBLE_DEVICES" : "")});
  }
  if (unsupported == f.driver.devices.size()) r.gpu_usable = false;
}

std::string device_summary(const DriverInfo& d) {
  const DeviceInfo& first = d.devices.front();
  std::string s = fmt::format("{} device{}: {} (compute capability {}.{})", d.device_count,
                              d.device_count == 1 ? "" : "s", first.name, first.cc_major, first.cc_minor);
  if (d.devices.size() > 1) s += ", ...";
  return s;
}

}  // namespace

Report diagnose(const Facts& f) {
  Report r;
  r.facts = f;
  r.visible = parse_visible_devices(f.cuda_visible_devices);

  if (!f.driver.loaded) {
    r.verdict = "No usable GPU: no NVIDIA driver is installed (libcuda.so.1 not found), so there is no GPU to use.";
    r.problems.push_back(
        {Severity::Error, "No NVIDIA driver: libcuda.so.1 not found",
         fmt::format("The loader could not open libcuda.so.1 ({}). Without the driver no CUDA program can use a GPU.",
                     f.driver.load_error.empty() ? "no reason given" : f.driver.load_error),
         fmt::format("on a machine with an NVIDIA GPU, install the NVIDIA driver ({}) and reboot; in a container, "
                     "start it with --gpus all (NVIDIA Container Toolkit); without a GPU, use GDRT_DEVICE=emu",
                     driver_for_runtime(f))});
  } else if (f.driver.init_result && *f.driver.init_result != 0) {
    explain_init_failure(f, r.visible, r);
  } else if (f.driver.device_count == 0 || f.driver.devices.empty()) {
    r.verdict = r.visible.hides_all
                    ? fmt::format("No usable GPU: {}", r.visible.description)
                    : fmt::format("No usable GPU: the NVIDIA driver (CUDA {}) is installed but sees no device.",
                                  cuda_version_string(f.driver.version));
    r.problems.push_back({Severity::Error, "The driver reports 0 devices",
                          r.visible.set ? r.visible.description : "No GPU is visible to this process.",
                          r.visible.hides_all ? "unset CUDA_VISIBLE_DEVICES or list the GPUs to use"
                                              : "run nvidia-smi; in a container, start it with --gpus all"});
  } else {
    r.gpu_usable = true;
    if (!f.driver.missing_symbols.empty()) {
      r.problems.push_back({Severity::Warning, "The driver lacks entry points doctor uses",
                            fmt::format("missing: {}", fmt::join(f.driver.missing_symbols, ", ")),
                            "upgrade the NVIDIA driver"});
    }
    check_runtime_against_driver(f, f.built_runtime_version, "The runtime gpudiag was built with", r);
    if (f.cuda_runtime.version != f.built_runtime_version) {
      check_runtime_against_driver(f, f.cuda_runtime.version, "The loadable libcudart", r);
    }
    const bool driver_fits = r.gpu_usable;
    check_architectures(f, r);
    if (r.gpu_usable) {
      r.verdict = fmt::format("GPU usable: {}; the driver supports CUDA {}.", device_summary(f.driver),
                              cuda_version_string(f.driver.version));
    } else if (driver_fits) {
      r.verdict = fmt::format("No usable GPU: {}.", r.problems.back().title);
    } else {
      r.verdict = fmt::format("No usable GPU: the driver supports CUDA {} but the CUDA runtime needs a newer driver; {}.",
                              cuda_version_string(f.driver.version), upgrade_advice(cuda_major(
                                  f.cuda_runtime.version > 0 ? f.cuda_runtime.version : f.built_runtime_version)));
    }
  }
  check_libraries(f, r);
  if (!r.gpu_usable) r.notes.emplace_back(kEmuNote);
  return r;
}

}  // namespace gpudiag::doctor
