// CUDA runtime errors returned by API calls made wrongly: memory, copies,
// streams, peers, graphs. Names, numbers and messages from driver_types.h and
// cudaGetErrorString (CUDA 13).
#include "cuda_error_tables.h"

namespace gpudiag::explain::detail {
namespace {

constexpr auto R = Library::CudaRuntime;

constexpr ErrorEntry kApiErrors[] = {
    {R, "cudaErrorInvalidValue", 1, "invalid argument", false,
     "An argument of the call is out of its valid range: a null or wrong pointer, a size or count that "
     "does not fit, a flag the call does not accept. It is returned synchronously by the call itself.",
     "cudaMemcpy with a size larger than one of the buffers, or a negative size cast to size_t\n"
     "a host pointer where a device pointer is required (or the reverse)\n"
     "cudaMemcpy direction that contradicts the pointers\n"
     "a pointer that was already freed",
     "device-mismatch premature-free unchecked-cuda-error",
     "check the arguments of the failing call (pointer kinds: cudaPointerGetAttributes)\n"
     "compute-sanitizer --tool memcheck ./train"},
    {R, "cudaErrorMemoryAllocation", 2, "out of memory", false,
     "The GPU could not satisfy an allocation. PyTorch reports its own variant ('CUDA out of memory. Tried "
     "to allocate ...') from its caching allocator. The context stays usable: freeing memory and retrying "
     "works.",
     "batch size or image size too large for the GPU (activations grow with batch x height x width)\n"
     "tensors kept alive across iterations: losses accumulated with their graph (total_loss += loss "
     "instead of loss.item()), lists of outputs\n"
     "memory that is never freed (a leak per iteration)\n"
     "another process on the same GPU\n"
     "fragmentation in a caching allocator",
     "out-of-memory memory-leak",
     "gpudiag trace -- ./train   # then gpudiag report: who held the memory at the failing request\n"
     "nvidia-smi   # other processes on the GPU\n"
     "torch.cuda.memory_summary() in PyTorch; lower the batch size; use mixed precision"},
    {R, "cudaErrorInvalidSymbol", 13, "invalid device symbol", false,
     "The symbol given to cudaMemcpyToSymbol / cudaGetSymbolAddress is not a __device__ or __constant__ "
     "variable of a loaded module.",
     "passing the symbol's name as a string (removed in CUDA 5) instead of the variable itself\n"
     "a __constant__ variable defined in another translation unit without relocatable device code (-rdc)",
     "",
     "pass the variable: cudaMemcpyToSymbol(weights, host, size)"},
    {R, "cudaErrorInvalidDevicePointer", 17, "invalid device pointer", false,
     "A pointer given where the runtime expects device memory is not device memory it knows, typically in "
     "cudaFree.",
     "cudaFree of a host pointer or of a pointer not returned by cudaMalloc (an offset into an "
     "allocation)\n"
     "double free: cudaFree of a pointer already freed\n"
     "freeing memory of another device or context",
     "premature-free device-mismatch",
     "compute-sanitizer --tool memcheck ./train   # reports invalid and double frees\n"
     "gpudiag trace -- ./train   # then gpudiag report: double frees with both stacks"},
    {R, "cudaErrorInvalidMemcpyDirection", 21, "invalid copy direction for memcpy", false,
     "The cudaMemcpyKind argument is not a valid direction.",
     "arguments of cudaMemcpy swapped so that the size is passed as the kind\n"
     "an integer instead of a cudaMemcpyKind constant",
     "device-mismatch",
     "use cudaMemcpyDefault with unified addressing, or check the argument order (dst, src, size, kind)"},
    {R, "cudaErrorInvalidResourceHandle", 400, "invalid resource handle", false,
     "A stream, event, graph or module handle is invalid: destroyed, never created, or created in another "
     "context.",
     "a stream or event destroyed while still used (cudaStreamDestroy then cudaEventRecord on it)\n"
     "handles created on one device used while another device is current\n"
     "a handle used after cudaDeviceReset",
     "premature-free",
     "check that every cudaStreamDestroy/cudaEventDestroy comes after the last use\n"
     "gpudiag trace -- ./train"},
    {R, "cudaErrorIllegalState", 401, "the operation cannot be performed in the present state", false,
     "The call is valid but not in the current state of the object (the driver API name is "
     "CUDA_ERROR_ILLEGAL_STATE).",
     "graph or capture operations called in the wrong order",
     "",
     "check the order of begin/end/instantiate calls"},
    {R, "cudaErrorSymbolNotFound", 500, "named symbol not found", false,
     "A kernel or variable looked up by name does not exist in the loaded module (the driver API name is "
     "CUDA_ERROR_NOT_FOUND).",
     "cuModuleGetFunction with a C++ name without extern \"C\" (the symbol is mangled)\n"
     "a kernel removed or renamed in the PTX/cubin that is loaded",
     "",
     "cuobjdump --dump-elf-symbols kernel.cubin   # the names the module really exports"},
    {R, "cudaErrorNotReady", 600, "device not ready", false,
     "Not an error: cudaStreamQuery or cudaEventQuery report that the work has not finished yet.",
     "checking this status as an error (treat it as 'still running')",
     "unchecked-cuda-error",
     "compare against cudaErrorNotReady before treating the status as a failure"},
    {R, "cudaErrorPeerAccessAlreadyEnabled", 704, "peer access is already enabled", false,
     "cudaDeviceEnablePeerAccess was called again for a pair of GPUs that already have peer access. "
     "Harmless, but the error also stays as the 'last error'.",
     "enabling peer access on every iteration or from several libraries",
     "unchecked-cuda-error",
     "call cudaGetLastError() after ignoring it, so it does not surface at the next check"},
    {R, "cudaErrorPeerAccessNotEnabled", 705, "peer access has not been enabled", false,
     "A peer operation needs peer access between two GPUs that was never enabled.",
     "cudaDeviceDisablePeerAccess without a matching enable\n"
     "a kernel on GPU 0 reading GPU 1's memory without cudaDeviceEnablePeerAccess",
     "device-mismatch",
     "nvidia-smi topo -m   # whether the GPUs can be peers at all\n"
     "call cudaDeviceEnablePeerAccess(peer, 0) from each device that reads the other"},
    {R, "cudaErrorSetOnActiveProcess", 708, "cannot set while device is active in this process", false,
     "A device flag or limit was set after the device's context was created (the driver API name is "
     "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE).",
     "cudaSetDeviceFlags after the first CUDA call that created the context",
     "",
     "call cudaSetDeviceFlags/cudaDeviceSetLimit before any other CUDA call on that device"},
    {R, "cudaErrorContextIsDestroyed", 709, "context is destroyed", false,
     "The context the call refers to was destroyed.",
     "cudaDeviceReset from one thread while another thread still uses the device\n"
     "objects (streams, memory) outliving the context at shutdown",
     "premature-free",
     "do not call cudaDeviceReset in library code; destroy resources before the context"},
    {R, "cudaErrorHostMemoryAlreadyRegistered", 712,
     "part or all of the requested memory range is already mapped", false,
     "cudaHostRegister was called on host memory that is already registered (pinned).",
     "registering the same buffer twice, or overlapping buffers",
     "pageable-async-copy",
     "keep one owner for pinning a buffer; cudaHostUnregister before registering again"},
    {R, "cudaErrorHostMemoryNotRegistered", 713, "pointer does not correspond to a registered memory region",
     false,
     "cudaHostUnregister (or cudaHostGetDevicePointer) was given memory that was never registered.",
     "unregistering twice, or unregistering a pointer that was allocated with cudaMallocHost",
     "pageable-async-copy",
     "free cudaMallocHost memory with cudaFreeHost; unregister only what cudaHostRegister registered"},
    {R, "cudaErrorNotPermitted", 800, "operation not permitted", false,
     "The operation is not permitted in this configuration (MPS, a container without the capability, "
     "a stream-capture restriction).",
     "peer access or IPC under MPS or in a restricted container",
     "",
     "gpudiag doctor\n"
     "nvidia-smi -q | grep -i -e mode -e mig"},
    {R, "cudaErrorNotSupported", 801, "operation not supported", false,
     "The operation is not supported on this device, driver or platform.",
     "managed memory features on a platform without them (concurrent managed access on Windows/WSL)\n"
     "stream-ordered allocation or IPC on GPUs that lack them",
     "",
     "check the device attributes for the feature (cudaDeviceGetAttribute)"},
    {R, "cudaErrorStreamCaptureUnsupported", 900, "operation not permitted when stream is capturing", false,
     "A call that is not allowed during CUDA graph capture was made on a capturing stream (a synchronising "
     "call, a pageable copy, a query).",
     "cudaMemcpy (synchronous) or cudaStreamSynchronize inside the captured region\n"
     "an .item() or a print of a GPU tensor inside torch.cuda.graph capture\n"
     "cudaMalloc (not stream ordered) during capture",
     "sync-in-loop scalar-indexing",
     "move synchronising calls out of the captured region; use cudaMallocAsync inside captures"},
    {R, "cudaErrorStreamCaptureInvalidated", 901, "operation failed due to a previous error during capture",
     false,
     "An earlier illegal call invalidated the stream capture; this is the consequence, not the cause.",
     "the first error reported during the capture (often cudaErrorStreamCaptureUnsupported)",
     "unchecked-cuda-error",
     "check every call inside the capture; fix the first one that failed"},
    {R, "cudaErrorStreamCaptureImplicit", 906,
     "operation would make the legacy stream depend on a capturing blocking stream", false,
     "Work was issued on the legacy default stream while another blocking stream was being captured; the "
     "legacy stream synchronises implicitly with it, which capture forbids.",
     "a library call or kernel launch on stream 0 during capture",
     "sync-in-loop",
     "capture on a non-blocking stream (cudaStreamNonBlocking) and issue all work there; or compile with "
     "--default-stream per-thread"},
};

}  // namespace

std::span<const ErrorEntry> cuda_api_errors() { return kApiErrors; }

}  // namespace gpudiag::explain::detail
