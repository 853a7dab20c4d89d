// cuBLAS statuses (cublas_api.h, cublasStatus_t) with the library's own text
// (cublasGetStatusString, CUDA 13).
#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain {
namespace {

constexpr auto B = Library::Cublas;

constexpr ErrorEntry kStatuses[] = {
    {B, "CUBLAS_STATUS_NOT_INITIALIZED", 1, "the library was not initialized", false,
     "cublasCreate failed or the handle was not created; usually because CUDA itself cannot start, or "
     "because the GPU had no memory left for cuBLAS's workspace. PyTorch reports it as 'CUDA error: "
     "CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)', which is very often an "
     "out-of-memory in disguise.",
     "GPU memory exhausted when the first matmul creates the handle\n"
     "no usable GPU or driver\n"
     "a handle used after cublasDestroy",
     "out-of-memory premature-free",
     "nvidia-smi   # free memory on the GPU\n"
     "gpudiag doctor\n"
     "CUDA_LAUNCH_BLOCKING=1 ./train"},
    {B, "CUBLAS_STATUS_ALLOC_FAILED", 3, "the resource allocation failed", false,
     "cuBLAS could not allocate memory it needs (workspace or internal buffers).",
     "GPU memory exhausted by the model's activations\n"
     "memory held across iterations (a leak)",
     "out-of-memory memory-leak",
     "gpudiag trace -- ./train   # then gpudiag report: who held the memory\n"
     "lower the batch size"},
    {B, "CUBLAS_STATUS_INVALID_VALUE", 7, "an unsupported value or parameter was passed to the function", false,
     "An argument is invalid: a negative m, n or k, a leading dimension smaller than the matrix's rows, "
     "an unsupported combination of types or compute type.",
     "lda/ldb/ldc smaller than the number of rows (row-major data described as column-major)\n"
     "a batch count or stride that does not fit the buffers\n"
     "a matmul with mixed data types that cuBLAS does not support",
     "float64-leak",
     "CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=stderr ./train   # logs every call with its arguments\n"
     "print shapes, strides and dtypes of the matmul operands"},
    {B, "CUBLAS_STATUS_ARCH_MISMATCH", 8, "the function requires an architectural feature absent from the device",
     false,
     "The routine needs a feature this GPU lacks (tensor cores for a data type, FP8, double precision "
     "features).",
     "BF16 or FP8 matmuls on a GPU older than Ampere/Hopper",
     "",
     "nvidia-smi --query-gpu=name,compute_cap --format=csv\n"
     "use a data type the GPU supports (FP16 instead of BF16 on pre-Ampere GPUs)"},
    {B, "CUBLAS_STATUS_MAPPING_ERROR", 11, "an access to GPU memory space failed", false,
     "cuBLAS failed to access GPU memory, typically while binding a texture or copying to or from the "
     "device (cublasSetMatrix/GetMatrix).",
     "a host pointer passed where device memory is expected\n"
     "a buffer freed before the call",
     "device-mismatch premature-free",
     "compute-sanitizer --tool memcheck ./train"},
    {B, "CUBLAS_STATUS_EXECUTION_FAILED", 13, "the function failed to launch on the GPU", false,
     "A cuBLAS kernel failed to launch or execute. Often the consequence of an earlier asynchronous CUDA "
     "error, or of operands in invalid memory.",
     "an earlier kernel's illegal memory access surfacing in the matmul\n"
     "operands in freed memory or on another device\n"
     "a GPU without support for the requested kernel",
     "premature-free device-mismatch unchecked-cuda-error",
     "CUDA_LAUNCH_BLOCKING=1 ./train   # whether an earlier kernel failed\n"
     "compute-sanitizer --tool memcheck ./train"},
    {B, "CUBLAS_STATUS_INTERNAL_ERROR", 14, "an internal operation failed", false,
     "An internal cuBLAS operation failed, usually a CUDA call inside cuBLAS (a memory copy or an "
     "allocation) failing because of an earlier error.",
     "an earlier sticky CUDA error\n"
     "GPU memory exhausted\n"
     "cuBLAS and CUDA runtime of different versions",
     "out-of-memory unchecked-cuda-error",
     "CUDA_LAUNCH_BLOCKING=1 ./train\n"
     "gpudiag doctor"},
    {B, "CUBLAS_STATUS_NOT_SUPPORTED", 15, "the requested functionality is not supported", false,
     "The combination of parameters (types, layouts, compute type, math mode) is not supported.",
     "Float64 operands in a cublasLt/mixed-precision path that supports only float types\n"
     "a cublasGemmEx type combination without a kernel",
     "float64-leak",
     "CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=stderr ./train\n"
     "check the dtypes of both operands"},
    {B, "CUBLAS_STATUS_LICENSE_ERROR", 16, "the license check failed", false,
     "A cuBLAS feature needs a license that was not found.",
     "a cuBLAS feature that is licensed separately",
     "",
     "install the regular CUDA toolkit libraries"},
};

}  // namespace

std::span<const ErrorEntry> cublas_statuses() { return kStatuses; }

}  // namespace gpudiag::explain
