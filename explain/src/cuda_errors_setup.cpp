// CUDA runtime errors about the installation: driver, devices, kernel images
// and hardware faults. Names, numbers and messages from driver_types.h and
// cudaGetErrorString (CUDA 13).
#include "cuda_error_tables.h"

namespace gpudiag::explain::detail {
namespace {

constexpr auto R = Library::CudaRuntime;

constexpr ErrorEntry kSetupErrors[] = {
    {R, "cudaErrorInitializationError", 3, "initialization error", false,
     "The CUDA driver or runtime could not be initialised in this process.",
     "CUDA used in a child process created by fork() after the parent initialised CUDA (DataLoader "
     "workers with the fork start method touching the GPU)\n"
     "a broken driver installation (kernel module and user-space library of different versions)\n"
     "the process has no permission on /dev/nvidia*",
     "",
     "gpudiag doctor\n"
     "use the 'spawn' start method for worker processes that use CUDA, or keep CUDA out of the workers\n"
     "nvidia-smi   # fails too when the driver itself is broken"},
    {R, "cudaErrorCudartUnloading", 4, "driver shutting down", false,
     "A CUDA call was made while the runtime was being unloaded, at process exit.",
     "cudaFree or a stream/event destroy in the destructor of a global or static object that runs after "
     "the runtime shut down\n"
     "CUDA calls from an atexit handler or a thread still running at exit",
     "memory-leak",
     "free device resources before main() returns, not in static destructors"},
    {R, "cudaErrorStubLibrary", 34, "CUDA driver is a stub library", false,
     "The process loaded the stub libcuda.so from the toolkit (lib64/stubs), which exists only so that "
     "programs can link on machines without a driver. It cannot run anything.",
     "LD_LIBRARY_PATH containing /usr/local/cuda/lib64/stubs\n"
     "a container image with the toolkit but without the driver mounted (no --gpus / NVIDIA container "
     "toolkit)",
     "",
     "gpudiag doctor\n"
     "remove the stubs directory from LD_LIBRARY_PATH; run containers with --gpus all"},
    {R, "cudaErrorInsufficientDriver", 35, "CUDA driver version is insufficient for CUDA runtime version",
     false,
     "The installed driver is older than the CUDA runtime the program was built with (the driver supports "
     "CUDA X.Y; the runtime needs a newer major version).",
     "a PyTorch/TensorFlow wheel built for CUDA 13 on a machine whose driver supports only CUDA 12\n"
     "a container with a newer CUDA than the host driver",
     "",
     "gpudiag doctor   # prints the driver's CUDA version next to the runtime's\n"
     "nvidia-smi   # 'CUDA Version' in the header is the newest CUDA the driver supports\n"
     "upgrade the driver, or install the build of your framework for the older CUDA"},
    {R, "cudaErrorCallRequiresNewerDriver", 36, "API call is not supported in the installed CUDA driver",
     false,
     "The runtime is newer than the driver within the same major version (minor version compatibility) "
     "and this particular call needs a driver feature the installed driver lacks.",
     "a runtime 13.x running on the first 13.0 driver and using an API added later",
     "",
     "gpudiag doctor\n"
     "upgrade the driver to one that supports the runtime's minor version"},
    {R, "cudaErrorDevicesUnavailable", 46, "CUDA-capable device(s) is/are busy or unavailable", false,
     "Every visible GPU is in use in a compute mode that refuses another process (Exclusive Process), or "
     "was made unavailable by the administrator.",
     "another training job holding the GPU in EXCLUSIVE_PROCESS mode\n"
     "a hung process from an earlier run still holding the GPU",
     "",
     "nvidia-smi   # compute mode and the processes on each GPU\n"
     "pick a free GPU with CUDA_VISIBLE_DEVICES, or stop the process holding it"},
    {R, "cudaErrorInvalidDeviceFunction", 98, "invalid device function", false,
     "The kernel cannot run on this device: the binary has no code for the GPU's architecture (and no PTX "
     "that could be JIT-compiled for it), or a function pointer given to the runtime is not a kernel.",
     "built with -arch=sm_80 only and run on an sm_75 or sm_90 GPU\n"
     "an extension compiled with TORCH_CUDA_ARCH_LIST that does not include this GPU",
     "",
     "nvidia-smi --query-gpu=name,compute_cap --format=csv\n"
     "cuobjdump --list-elf ./train   # which sm_XX the binary contains\n"
     "rebuild with -gencode for the GPU's architecture (and compute_XX PTX for newer ones)"},
    {R, "cudaErrorNoDevice", 100, "no CUDA-capable device is detected", false,
     "The driver is loaded but it sees no GPU.",
     "CUDA_VISIBLE_DEVICES set to -1, to an empty string or to indices that do not exist\n"
     "a container started without --gpus\n"
     "the GPU fell off the bus (check dmesg for Xid errors)",
     "",
     "gpudiag doctor   # shows what CUDA_VISIBLE_DEVICES hides\n"
     "nvidia-smi\n"
     "without a GPU, gdrt's emulated GPU runs the same code: GDRT_DEVICE=emu"},
    {R, "cudaErrorInvalidDevice", 101, "invalid device ordinal", false,
     "A device index is out of range: cudaSetDevice(n) or a tensor placed on cuda:n where n >= the number "
     "of visible GPUs.",
     "code hard-wired to cuda:1 running on a one-GPU machine\n"
     "CUDA_VISIBLE_DEVICES renumbers the GPUs: with CUDA_VISIBLE_DEVICES=2 the GPU is cuda:0, not cuda:2\n"
     "a checkpoint saved on cuda:1 loaded without map_location",
     "device-checkpoint device-mismatch",
     "gpudiag doctor   # lists the visible devices\n"
     "load checkpoints with map_location, select devices by a variable, not a constant"},
    {R, "cudaErrorInvalidKernelImage", 200, "device kernel image is invalid", false,
     "The kernel image (cubin/fatbin) in the binary is corrupt or was built for something else.",
     "a fatbin loaded with cuModuleLoad from a file that is truncated or not a CUDA image\n"
     "a binary built by a newer toolkit than the driver can load",
     "",
     "gpudiag doctor\n"
     "cuobjdump --list-elf --list-ptx ./train"},
    {R, "cudaErrorDeviceUninitialized", 201, "invalid device context", false,
     "There is no valid CUDA context for the calling thread, or it was destroyed (the driver API name is "
     "CUDA_ERROR_INVALID_CONTEXT).",
     "a context destroyed (cudaDeviceReset) while other code still uses it\n"
     "driver-API code on a thread that never made a context current",
     "",
     "avoid cudaDeviceReset in library code; call cudaSetDevice on each new thread"},
    {R, "cudaErrorNoKernelImageForDevice", 209, "no kernel image is available for execution on the device",
     false,
     "The binary contains no code for this GPU's compute capability and no PTX the driver could compile "
     "for it. PyTorch prints it as 'no kernel image is available for execution on the device'.",
     "a framework wheel built without the architecture of a new GPU (sm_90/sm_100 with an old wheel)\n"
     "a custom CUDA extension compiled for the build machine's GPU only",
     "",
     "nvidia-smi --query-gpu=name,compute_cap --format=csv\n"
     "cuobjdump --list-elf ./train\n"
     "rebuild with -gencode arch=compute_XX,code=sm_XX for the GPU (and PTX for forward compatibility)"},
    {R, "cudaErrorECCUncorrectable", 214, "uncorrectable ECC error encountered", false,
     "The GPU memory reported a double-bit error that ECC could not correct. This is a hardware fault, "
     "not a bug in the program.",
     "failing GPU memory; a GPU that needs a reset or a retired-page update",
     "",
     "nvidia-smi -q -d ECC,PAGE_RETIREMENT\n"
     "dmesg | grep -i xid\n"
     "reset the GPU (nvidia-smi -r) or move the job to another GPU and report the node"},
    {R, "cudaErrorInvalidPtx", 218, "a PTX JIT compilation failed", false,
     "The driver tried to JIT-compile the PTX embedded in the binary for this GPU and failed.",
     "PTX produced by a newer toolkit than the driver understands\n"
     "a driver JIT bug with unusual PTX",
     "",
     "gpudiag doctor   # compare driver and toolkit versions\n"
     "build SASS for the GPU's architecture so no JIT is needed"},
    {R, "cudaErrorNvlinkUncorrectable", 220, "uncorrectable NVLink error detected during the execution",
     false,
     "A hardware error on an NVLink connection between GPUs.",
     "faulty NVLink bridge or GPU",
     "",
     "nvidia-smi nvlink --status\n"
     "dmesg | grep -i xid"},
    {R, "cudaErrorJitCompilerNotFound", 221, "PTX JIT compiler library not found", false,
     "The binary has only PTX for this GPU and the driver's JIT compiler library (libnvidia-ptxjitcompiler) "
     "is missing.",
     "a container or minimal install that mounts libcuda but not the JIT compiler library",
     "",
     "install the full driver user-space, or build SASS for the GPU so no JIT is needed"},
    {R, "cudaErrorUnsupportedPtxVersion", 222, "the provided PTX was compiled with an unsupported toolchain.",
     false,
     "The PTX in the binary is newer than the driver's JIT compiler: built with a newer toolkit than the "
     "driver supports. Under minor version compatibility SASS runs but PTX cannot be JIT-compiled.",
     "a CUDA 13.x build running on a 13.0 driver with PTX only for this GPU",
     "",
     "gpudiag doctor\n"
     "upgrade the driver, or build SASS (-gencode ...,code=sm_XX) for the GPU"},
    {R, "cudaErrorContained", 226, "Invalid access of peer GPU memory over nvlink or a hardware error", true,
     "A hardware error or an invalid access to a peer GPU's memory over NVLink was contained by the GPU. "
     "The process is in an inconsistent state and must be restarted.",
     "a kernel dereferencing another GPU's memory that is no longer valid\n"
     "hardware faults reported as Xid errors",
     "premature-free device-mismatch",
     "dmesg | grep -i xid\n"
     "compute-sanitizer --tool memcheck ./train"},
    {R, "cudaErrorSystemNotReady", 802, "system not yet initialized", false,
     "The system is not ready for CUDA: on NVSwitch systems (HGX/DGX) the fabric manager is not running.",
     "nvidia-fabricmanager service stopped or of a different version than the driver",
     "",
     "systemctl status nvidia-fabricmanager\n"
     "nvidia-smi -q | grep -i fabric"},
    {R, "cudaErrorSystemDriverMismatch", 803, "system has unsupported display driver / cuda driver combination",
     false,
     "The kernel module and the user-space driver (libcuda) are of different versions, or a forward "
     "compatibility package does not match the kernel driver.",
     "a driver upgrade without reboot (old kernel module still loaded)\n"
     "a cuda-compat package in LD_LIBRARY_PATH on an unsupported driver",
     "",
     "cat /proc/driver/nvidia/version   # the kernel module's version\n"
     "gpudiag doctor   # the user-space driver's version\n"
     "reboot after a driver upgrade"},
    {R, "cudaErrorCompatNotSupportedOnDevice", 804, "forward compatibility was attempted on non supported HW",
     false,
     "A CUDA forward compatibility package (a newer libcuda on an older kernel driver) is in use on a GPU "
     "that does not support forward compatibility (consumer GeForce GPUs).",
     "a cuda-compat libcuda picked up from LD_LIBRARY_PATH on a GeForce card",
     "",
     "remove the compat directory from LD_LIBRARY_PATH and upgrade the real driver instead"},
    {R, "cudaErrorUnknown", 999, "unknown error", false,
     "The driver reported an error it could not classify. On a working machine this often follows a "
     "driver problem: the GPU fell off the bus, a suspend/resume, or a driver update without reboot.",
     "a GPU in a bad state after an Xid error\n"
     "a laptop resumed from suspend with the nvidia_uvm module in a bad state",
     "",
     "dmesg | grep -i -e xid -e nvrm\n"
     "nvidia-smi\n"
     "gpudiag doctor"},
};

}  // namespace

std::span<const ErrorEntry> cuda_setup_errors() { return kSetupErrors; }

}  // namespace gpudiag::explain::detail
