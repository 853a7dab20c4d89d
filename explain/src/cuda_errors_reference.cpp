// The CUDA runtime errors gpudiag has no explanation of its own for: name,
// number, the runtime's message (cudaGetErrorString) and whether the header
// documents it as corrupting the context. `gpudiag explain` marks them as
// reference rows and points to the CUDA Runtime API documentation. Every
// row was checked against driver_types.h and libcudart of CUDA 13; the
// explain tests compare the whole table with the header.
#include "cuda_error_tables.h"

namespace gpudiag::explain::detail {
namespace {

constexpr auto R = Library::CudaRuntime;

// clang-format off
constexpr ErrorEntry kReferenceErrors[] = {
    {R, "cudaErrorProfilerDisabled", 5, "profiler disabled while using external profiling tool", false, "", "", "", ""},
    {R, "cudaErrorProfilerNotInitialized", 6, "profiler not initialized: call cudaProfilerInitialize()", false, "", "", "", ""},
    {R, "cudaErrorProfilerAlreadyStarted", 7, "profiler already started", false, "", "", "", ""},
    {R, "cudaErrorProfilerAlreadyStopped", 8, "profiler already stopped", false, "", "", "", ""},
    {R, "cudaErrorInvalidPitchValue", 12, "invalid pitch argument", false, "", "", "", ""},
    {R, "cudaErrorInvalidHostPointer", 16, "invalid host pointer", false, "", "", "", ""},
    {R, "cudaErrorInvalidTexture", 18, "invalid texture reference", false, "", "", "", ""},
    {R, "cudaErrorInvalidTextureBinding", 19, "texture is not bound to a pointer", false, "", "", "", ""},
    {R, "cudaErrorInvalidChannelDescriptor", 20, "invalid channel descriptor", false, "", "", "", ""},
    {R, "cudaErrorAddressOfConstant", 22, "invalid address of constant", false, "", "", "", ""},
    {R, "cudaErrorTextureFetchFailed", 23, "fetch from texture failed", false, "", "", "", ""},
    {R, "cudaErrorTextureNotBound", 24, "cannot fetch from a texture that is not bound", false, "", "", "", ""},
    {R, "cudaErrorSynchronizationError", 25, "incorrect use of __syncthreads()", false, "", "", "", ""},
    {R, "cudaErrorInvalidFilterSetting", 26, "linear filtering not supported for non-float type", false, "", "", "", ""},
    {R, "cudaErrorInvalidNormSetting", 27, "read as normalized float not supported for data type", false, "", "", "", ""},
    {R, "cudaErrorMixedDeviceExecution", 28, "device emulation mode and device execution mode cannot be mixed", false, "", "", "", ""},
    {R, "cudaErrorNotYetImplemented", 31, "feature not yet implemented", false, "", "", "", ""},
    {R, "cudaErrorMemoryValueTooLarge", 32, "memory size or pointer value too large to fit in 32 bit", false, "", "", "", ""},
    {R, "cudaErrorInvalidSurface", 37, "invalid surface reference", false, "", "", "", ""},
    {R, "cudaErrorDuplicateVariableName", 43, "duplicate global variable looked up by string name", false, "", "", "", ""},
    {R, "cudaErrorDuplicateTextureName", 44, "duplicate texture looked up by string name", false, "", "", "", ""},
    {R, "cudaErrorDuplicateSurfaceName", 45, "duplicate surface looked up by string name", false, "", "", "", ""},
    {R, "cudaErrorIncompatibleDriverContext", 49, "incompatible driver context", false, "", "", "", ""},
    {R, "cudaErrorMissingConfiguration", 52, "__global__ function call is not configured", false, "", "", "", ""},
    {R, "cudaErrorLaunchMaxDepthExceeded", 65, "launch would exceed maximum depth of nested launches", false, "", "", "", ""},
    {R, "cudaErrorLaunchFileScopedTex", 66, "launch failed because kernel uses unsupported, file-scoped textures (texture objects are supported)", false, "", "", "", ""},
    {R, "cudaErrorLaunchFileScopedSurf", 67, "launch failed because kernel uses unsupported, file-scoped surfaces (surface objects are supported)", false, "", "", "", ""},
    {R, "cudaErrorSyncDepthExceeded", 68, "cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth", false, "", "", "", ""},
    {R, "cudaErrorLaunchPendingCountExceeded", 69, "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount", false, "", "", "", ""},
    {R, "cudaErrorDeviceNotLicensed", 102, "device doesn't have valid Grid license", false, "", "", "", ""},
    {R, "cudaErrorSoftwareValidityNotEstablished", 103, "integrity checks failed", false, "", "", "", ""},
    {R, "cudaErrorStartupFailure", 127, "startup failure in cuda runtime", false, "", "", "", ""},
    {R, "cudaErrorMapBufferObjectFailed", 205, "mapping of buffer object failed", false, "", "", "", ""},
    {R, "cudaErrorUnmapBufferObjectFailed", 206, "unmapping of buffer object failed", false, "", "", "", ""},
    {R, "cudaErrorArrayIsMapped", 207, "array is mapped", false, "", "", "", ""},
    {R, "cudaErrorAlreadyMapped", 208, "resource already mapped", false, "", "", "", ""},
    {R, "cudaErrorAlreadyAcquired", 210, "resource already acquired", false, "", "", "", ""},
    {R, "cudaErrorNotMapped", 211, "resource not mapped", false, "", "", "", ""},
    {R, "cudaErrorNotMappedAsArray", 212, "resource not mapped as array", false, "", "", "", ""},
    {R, "cudaErrorNotMappedAsPointer", 213, "resource not mapped as pointer", false, "", "", "", ""},
    {R, "cudaErrorUnsupportedLimit", 215, "limit is not supported on this architecture", false, "", "", "", ""},
    {R, "cudaErrorDeviceAlreadyInUse", 216, "exclusive-thread device already in use by a different thread", false, "", "", "", ""},
    {R, "cudaErrorPeerAccessUnsupported", 217, "peer access is not supported between these two devices", false, "", "", "", ""},
    {R, "cudaErrorInvalidGraphicsContext", 219, "invalid OpenGL or DirectX context", false, "", "", "", ""},
    {R, "cudaErrorJitCompilationDisabled", 223, "PTX JIT compilation was disabled", false, "", "", "", ""},
    {R, "cudaErrorUnsupportedExecAffinity", 224, "the provided execution affinity is not supported", false, "", "", "", ""},
    {R, "cudaErrorUnsupportedDevSideSync", 225, "the provided PTX contains unsupported call to cudaDeviceSynchronize", false, "", "", "", ""},
    {R, "cudaErrorInvalidSource", 300, "device kernel image is invalid", false, "", "", "", ""},
    {R, "cudaErrorFileNotFound", 301, "file not found", false, "", "", "", ""},
    {R, "cudaErrorSharedObjectSymbolNotFound", 302, "shared object symbol not found", false, "", "", "", ""},
    {R, "cudaErrorSharedObjectInitFailed", 303, "shared object initialization failed", false, "", "", "", ""},
    {R, "cudaErrorOperatingSystem", 304, "OS call failed or operation not supported on this OS", false, "", "", "", ""},
    {R, "cudaErrorLossyQuery", 402, "attempted introspection would be semantically lossy", false, "", "", "", ""},
    {R, "cudaErrorLaunchIncompatibleTexturing", 703, "launch uses incompatible texturing mode", false, "", "", "", ""},
    {R, "cudaErrorTooManyPeers", 711, "peer mapping resources exhausted", false, "", "", "", ""},
    {R, "cudaErrorTensorMemoryLeak", 721, "tensor memory not completely freed", true, "", "", "", ""},
    {R, "cudaErrorMpsConnectionFailed", 805, "MPS client failed to connect to the MPS control daemon or the MPS server", false, "", "", "", ""},
    {R, "cudaErrorMpsRpcFailure", 806, "the remote procedural call between the MPS server and the MPS client failed", false, "", "", "", ""},
    {R, "cudaErrorMpsServerNotReady", 807, "MPS server is not ready to accept new MPS client requests", false, "", "", "", ""},
    {R, "cudaErrorMpsMaxClientsReached", 808, "the hardware resources required to create MPS client have been exhausted", false, "", "", "", ""},
    {R, "cudaErrorMpsMaxConnectionsReached", 809, "the hardware resources required to support device connections have been exhausted", false, "", "", "", ""},
    {R, "cudaErrorMpsClientTerminated", 810, "the MPS client has been terminated by the server", true, "", "", "", ""},
    {R, "cudaErrorCdpNotSupported", 811, "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it", false, "", "", "", ""},
    {R, "cudaErrorCdpVersionMismatch", 812, "unsupported interaction between different versions of CUDA Dynamic Parallelism", false, "", "", "", ""},
    {R, "cudaErrorStreamCaptureMerge", 902, "operation would result in a merge of separate capture sequences", false, "", "", "", ""},
    {R, "cudaErrorStreamCaptureUnmatched", 903, "capture was not ended in the same stream as it began", false, "", "", "", ""},
    {R, "cudaErrorStreamCaptureUnjoined", 904, "capturing stream has unjoined work", false, "", "", "", ""},
    {R, "cudaErrorStreamCaptureIsolation", 905, "dependency created on uncaptured work in another stream", false, "", "", "", ""},
    {R, "cudaErrorCapturedEvent", 907, "operation not permitted on an event last recorded in a capturing stream", false, "", "", "", ""},
    {R, "cudaErrorStreamCaptureWrongThread", 908, "attempt to terminate a thread-local capture sequence from another thread", false, "", "", "", ""},
    {R, "cudaErrorTimeout", 909, "wait operation timed out", false, "", "", "", ""},
    {R, "cudaErrorGraphExecUpdateFailure", 910, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update", false, "", "", "", ""},
    {R, "cudaErrorExternalDevice", 911, "an async error has occured in external entity outside of CUDA", true, "", "", "", ""},
    {R, "cudaErrorInvalidClusterSize", 912, "a kernel launch error has occurred due to cluster misconfiguration", false, "", "", "", ""},
    {R, "cudaErrorFunctionNotLoaded", 913, "the function handle is not loaded when calling an API that requires a loaded function", false, "", "", "", ""},
    {R, "cudaErrorInvalidResourceType", 914, "one or more resources passed in are not valid resource types for the operation", false, "", "", "", ""},
    {R, "cudaErrorInvalidResourceConfiguration", 915, "one or more resources are insufficient or non-applicable for the operation", false, "", "", "", ""},
};
// clang-format on

}  // namespace

std::span<const ErrorEntry> cuda_reference_errors() { return kReferenceErrors; }

}  // namespace gpudiag::explain::detail
