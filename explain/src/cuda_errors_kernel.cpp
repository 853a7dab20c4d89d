// CUDA runtime errors raised by a kernel while it runs (the 700 series) or by
// its launch. Names, numbers and messages are those of driver_types.h and
// cudaGetErrorString (CUDA 13); the sticky flag follows the header's note that
// the error "leaves the process in an inconsistent state".
#include "cuda_error_tables.h"

namespace gpudiag::explain::detail {
namespace {

constexpr auto R = Library::CudaRuntime;

constexpr ErrorEntry kKernelErrors[] = {
    {R, "cudaErrorInvalidConfiguration", 9, "invalid configuration argument", false,
     "The launch configuration is impossible for this device: too many threads per block, a block or grid "
     "dimension out of range, or more dynamic shared memory than a block may use.",
     "blockDim.x * blockDim.y * blockDim.z > 1024\n"
     "a grid computed from a tensor size that is 0 (gridDim 0) or overflowed to a huge value\n"
     "dynamic shared memory above 48 KiB without cudaFuncSetAttribute(..., "
     "cudaFuncAttributeMaxDynamicSharedMemorySize, ...)",
     "unchecked-cuda-error",
     "print the <<<grid, block, smem>>> values just before the launch\n"
     "check the limits with `nvidia-smi -q` or cudaGetDeviceProperties (maxThreadsPerBlock, maxGridSize, "
     "sharedMemPerBlockOptin)"},
    {R, "cudaErrorPriorLaunchFailure", 53, "unspecified launch failure in prior launch", false,
     "An earlier kernel launch failed and this call is the first to report it. The failing kernel is "
     "not the one at the line that raised the error.",
     "an unchecked launch that faulted earlier in the iteration\n"
     "an asynchronous error surfacing at the next synchronising call",
     "unchecked-cuda-error",
     "CUDA_LAUNCH_BLOCKING=1 ./train   # the error is then raised at the launch that caused it\n"
     "check cudaGetLastError() after every launch"},
    {R, "cudaErrorIllegalAddress", 700, "an illegal memory access was encountered", true,
     "A kernel read or wrote an address that is not valid device memory for this context. The error is "
     "reported asynchronously, usually at a later, innocent call (a cudaMemcpy, a synchronize, the next "
     "PyTorch op), and it is sticky: the context is corrupted and every following CUDA call fails with the "
     "same error until the process exits.",
     "an index out of bounds in a kernel (off-by-one in the grid-stride loop, a missing `if (i < n)` guard)\n"
     "a host pointer (malloc/new/std::vector data) passed to a kernel instead of a device pointer\n"
     "memory freed (cudaFree, cudaFreeAsync, a caching allocator release) while a kernel on another stream "
     "still used it\n"
     "a tensor on another GPU passed to a kernel without peer access\n"
     "wrong strides or shape assumptions (a non-contiguous tensor treated as contiguous)",
     "premature-free device-mismatch unsynced-transfer",
     "compute-sanitizer --tool memcheck ./train   # names the kernel, the thread and the bad address\n"
     "CUDA_LAUNCH_BLOCKING=1 ./train   # makes the failing launch raise the error itself\n"
     "gpudiag trace -- ./train   # then gpudiag report on the trace: frees of memory still in use, host "
     "pointers passed to kernels"},
    {R, "cudaErrorLaunchOutOfResources", 701, "too many resources requested for launch", false,
     "The kernel needs more registers or shared memory per block than the multiprocessor has for the "
     "requested block size. The launch did not happen; the context is still usable.",
     "a large block (1024 threads) combined with a register-heavy kernel (registers per thread x threads "
     "> 65536)\n"
     "a debug build (-G) that uses many more registers than the release build\n"
     "a block size tuned on one architecture reused on another",
     "unchecked-cuda-error",
     "nvcc --resource-usage (or -Xptxas -v) to see registers and shared memory per kernel\n"
     "lower the block size, or add __launch_bounds__(threads) so the compiler limits registers\n"
     "cudaOccupancyMaxPotentialBlockSize to pick a block size that fits"},
    {R, "cudaErrorLaunchTimeout", 702, "the launch timed out and was terminated", true,
     "A kernel ran longer than the watchdog allows on a GPU that also drives a display (or under a "
     "debugger with a timeout). The driver killed it; the context is unusable.",
     "one very long kernel on a desktop GPU that runs the display\n"
     "an infinite loop in a kernel (a spin-wait on a flag that is never set, a loop bound read from "
     "uninitialised memory)",
     "",
     "nvidia-smi -q | grep -i timeout   # 'Kernel Exec Timeout' shows whether a watchdog applies\n"
     "split the work into shorter kernels, or train on a GPU without a display attached\n"
     "compute-sanitizer --tool racecheck ./train   # when a spin-wait never ends"},
    {R, "cudaErrorAssert", 710, "device-side assert triggered", true,
     "A device-side assert() failed in a kernel. In PyTorch this is mostly an index check: a class label "
     "outside [0, num_classes) in a loss, or an index out of range in embedding/gather/scatter. The error "
     "is sticky and reported at a later call.",
     "segmentation masks with a label value of 255 (ignore label) or num_classes, given to "
     "cross-entropy without ignore_index\n"
     "an embedding index >= num_embeddings\n"
     "a gather/scatter/index_select index out of range",
     "",
     "CUDA_LAUNCH_BLOCKING=1 ./train   # the traceback then points at the op whose assert fired\n"
     "run the same batch on the CPU: the CPU kernels raise a readable IndexError with the bad value\n"
     "check the label range: torch.unique(mask) against num_classes"},
    {R, "cudaErrorHardwareStackError", 714, "hardware stack error", true,
     "A kernel corrupted its call stack or overflowed it. The context is unusable.",
     "deep or unbounded recursion in device code\n"
     "large local arrays in a recursive device function\n"
     "a stack size limit (cudaLimitStackSize) too small for the kernel",
     "",
     "compute-sanitizer ./train\n"
     "raise cudaDeviceSetLimit(cudaLimitStackSize, ...) or remove the recursion"},
    {R, "cudaErrorIllegalInstruction", 715, "an illegal instruction was encountered", true,
     "The GPU hit an instruction it cannot execute. The context is unusable.",
     "calling through an invalid device function pointer (a host function pointer used in a kernel)\n"
     "corrupted device memory that held code addresses (virtual function tables of objects created on "
     "the host and copied to the device)\n"
     "a kernel image built for a different architecture loaded by mistake",
     "device-mismatch",
     "compute-sanitizer ./train\n"
     "create objects with virtual functions on the device, not by copying host objects"},
    {R, "cudaErrorMisalignedAddress", 716, "misaligned address", true,
     "A kernel loaded or stored a value at an address that is not aligned to its size (a float4 at an "
     "address not divisible by 16). The context is unusable.",
     "vectorised loads (float4, half2, int4) on a tensor view whose offset is not a multiple of the "
     "vector width\n"
     "reinterpret_cast of a byte buffer to a wider type at an odd offset\n"
     "a packed struct read as a whole in device code",
     "",
     "compute-sanitizer --tool memcheck ./train   # reports the address and the access size\n"
     "check the alignment of every pointer passed to a vectorised kernel (ptr % 16 == 0)"},
    {R, "cudaErrorInvalidAddressSpace", 717, "operation not supported on global/shared address space", true,
     "An instruction was used on an address space it does not support (an atomic or a load on a "
     "generic pointer that points into the wrong space). The context is unusable.",
     "a pointer to shared memory passed to code that assumes global memory (or the reverse)\n"
     "atomics on local (stack) memory",
     "",
     "compute-sanitizer ./train"},
    {R, "cudaErrorInvalidPc", 718, "invalid program counter", true,
     "The GPU jumped to an address that is not code. In training code this is almost always the result "
     "of memory corruption: a kernel overwrote something, often memory that was already freed and "
     "reused. The context is unusable.",
     "a use-after-free of device memory that held function pointers or objects with virtual functions\n"
     "an out-of-bounds write that corrupted another allocation\n"
     "memory freed while queued work still used it",
     "premature-free device-mismatch",
     "compute-sanitizer --tool memcheck ./train\n"
     "gpudiag trace -- ./train   # then gpudiag report on the trace: frees while work was pending"},
    {R, "cudaErrorLaunchFailure", 719, "unspecified launch failure", true,
     "A kernel faulted for a reason the driver could not classify (often a memory fault on older drivers "
     "or GPUs: a dereference of an invalid pointer). The context is unusable; the error shows up at a "
     "later call.",
     "a device pointer that is stale (freed) or was never allocated\n"
     "a host pointer dereferenced in a kernel\n"
     "an out-of-bounds access, as for cudaErrorIllegalAddress",
     "premature-free device-mismatch",
     "compute-sanitizer --tool memcheck ./train\n"
     "CUDA_LAUNCH_BLOCKING=1 ./train   # find which launch fails"},
    {R, "cudaErrorCooperativeLaunchTooLarge", 720, "too many blocks in cooperative launch", false,
     "A cooperative launch (cudaLaunchCooperativeKernel, grid-wide sync) asked for more blocks than can "
     "be resident on the GPU at once.",
     "a grid size computed for another GPU, or larger than SMs x blocks per SM",
     "",
     "size the grid with cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount"},
};

}  // namespace

std::span<const ErrorEntry> cuda_kernel_errors() { return kKernelErrors; }

}  // namespace gpudiag::explain::detail
