// cuDNN 9 statuses (cudnn_graph.h, cudnnStatus_t). cuDNN 9 groups codes by
// category (x000) with specific sub-codes; cudnnGetErrorString returns the
// name itself, so the entries carry no separate message. The cuDNN 8 names
// that cuDNN 9 keeps as deprecated aliases map onto their new codes.
#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain {
namespace {

constexpr auto N = Library::Cudnn;

// Adjacent literals so each entry can end with the same advice.
#define GPUDIAG_CUDNN_LOG \
  "CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr ./train   # cuDNN logs why it rejected the call"
#define GPUDIAG_CUDNN_OFF "with PyTorch: torch.backends.cudnn.enabled = False confirms cuDNN is the part that fails"

constexpr ErrorEntry kStatuses[] = {
    {N, "CUDNN_STATUS_NOT_INITIALIZED", 1001, "", false,
     "cudnnCreate failed: cuDNN could not set up its handle, almost always because CUDA itself is not "
     "usable in this process.",
     "no GPU or no driver (cuDNN needs a working CUDA context)\n"
     "a driver older than the CUDA runtime cuDNN was built for\n"
     "the GPU is out of memory when the handle is created",
     "out-of-memory",
     "gpudiag doctor   # driver, runtime and cuDNN versions and whether they fit together\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", 1002, "", false,
     "The cuDNN sub-libraries loaded into the process (libcudnn_graph, libcudnn_ops, libcudnn_cnn, "
     "libcudnn_adv, the engine libraries) are of different versions. Its cuDNN 8 name is "
     "CUDNN_STATUS_VERSION_MISMATCH.",
     "two cuDNN installations mixed: a pip nvidia-cudnn wheel and a system libcudnn, one found through "
     "LD_LIBRARY_PATH and the other through rpath\n"
     "a partial upgrade that left old sub-libraries behind",
     "",
     "gpudiag doctor   # the cuDNN that is loaded and where from\n"
     "ldconfig -p | grep cudnn; pip list | grep -i cudnn\n"
     "keep exactly one cuDNN on the library path"},
    {N, "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH", 1003, "", false,
     "A serialized execution plan or graph was produced by a different cuDNN version and cannot be loaded.",
     "a plan cache written by another cuDNN version and reused after an upgrade",
     "",
     "delete the cached plans and let cuDNN build them again"},
    {N, "CUDNN_STATUS_DEPRECATED", 1004, "", false,
     "The called API is deprecated in this cuDNN version.",
     "cuDNN 7/8-era legacy calls used with cuDNN 9",
     "",
     "move to the graph API (or the frontend) for this operation\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_LICENSE_ERROR", 1005, "", false,
     "The cuDNN license check failed: a feature was requested that the installed cuDNN is not licensed "
     "for.",
     "a cuDNN build with restricted features",
     "",
     "install the regular cuDNN distribution from NVIDIA"},
    {N, "CUDNN_STATUS_RUNTIME_IN_PROGRESS", 1006, "", false,
     "Returned by cudnnQueryRuntimeError in non-blocking mode: the kernels being checked have not finished, "
     "so their status is not known yet.",
     "querying runtime errors right after launching, without synchronising",
     "unsynced-transfer",
     "query in blocking mode, or synchronise the stream before querying"},
    {N, "CUDNN_STATUS_RUNTIME_FP_OVERFLOW", 1007, "", false,
     "A cuDNN kernel detected a floating-point overflow (reported through cudnnQueryRuntimeError, e.g. in "
     "batch normalisation).",
     "a diverging training run (learning rate too high), FP16 activations beyond 65504\n"
     "uninitialised input memory",
     "",
     "check the loss for inf/NaN; use loss scaling (GradScaler) with FP16, or BF16"},
    {N, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", 1008, "", false,
     "cuDNN could not load one of its sub-libraries (libcudnn_ops.so.9, libcudnn_cnn.so.9, "
     "libcudnn_engines_*.so.9, ...), which it opens at run time.",
     "only libcudnn.so.9 copied into an image or a wheel, without the other libcudnn_*.so.9 files\n"
     "the sub-libraries not on the library path of the process",
     "",
     "gpudiag doctor\n"
     "ls $(dirname $(ldconfig -p | grep -m1 libcudnn.so.9 | awk '{print $NF}'))/libcudnn_*\n"
     "LD_DEBUG=libs ./train 2>&1 | grep cudnn   # which file it looked for"},
    {N, "CUDNN_STATUS_BAD_PARAM", 2000, "", false,
     "cuDNN rejected an argument: a descriptor, a pointer or a value that is inconsistent with the others. "
     "The call did not run.",
     "tensor descriptors whose dimensions or strides do not match the data (a non-contiguous tensor "
     "described as packed)\n"
     "input, filter and output descriptors that disagree (channels of x vs the filter, output size "
     "computed with different padding/stride)\n"
     "a null or host pointer for data or workspace\n"
     "data types that do not fit together (a double input with a float filter)",
     "device-mismatch float64-leak",
     GPUDIAG_CUDNN_LOG "\n"
     "print the shapes, strides, dtypes and devices of every tensor passed to the failing op\n"
     GPUDIAG_CUDNN_OFF},
    {N, "CUDNN_STATUS_INVALID_VALUE", 2001, "", false,
     "The cuDNN 8 status for an invalid argument value; cuDNN 9 keeps the code but reports "
     "CUDNN_STATUS_BAD_PARAM instead.",
     "a value out of range (negative padding, a zero dimension, an unknown enum value)",
     "",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER", 2002, "", false,
     "A pointer argument that must not be null was null: a handle, a descriptor, data or the workspace "
     "when its size is not zero.",
     "a workspace of size > 0 never allocated\n"
     "an empty tensor whose data pointer is null",
     "unchecked-cuda-error",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER", 2003, "", false,
     "A data pointer is not aligned as the operation needs (vectorised engines need 16-byte alignment).",
     "a tensor view starting at an odd element offset into its storage",
     "",
     "make the tensor contiguous (a copy has aligned storage)\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED", 2004, "", false,
     "A backend descriptor was used before cudnnBackendFinalize was called on it.",
     "graph-API code that skips finalize, or finalize failed and its status was ignored",
     "unchecked-cuda-error",
     "check the status of every cudnnBackendFinalize"},
    {N, "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND", 2005, "", false,
     "A value is outside its valid range (an index, a dimension count, an attribute count).",
     "more dimensions than cuDNN supports (CUDNN_DIM_MAX) or a negative dimension",
     "",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT", 2006, "", false,
     "A buffer given to cuDNN is smaller than it must be: most often the workspace.",
     "a workspace sized for another algorithm or another shape than the one executed\n"
     "an array argument with fewer elements than the count passed",
     "",
     "query the workspace size for the exact plan/algorithm and shapes you run"},
    {N, "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH", 2007, "", false,
     "Objects tied to different CUDA streams were combined in one call.",
     "a handle bound to one stream (cudnnSetStream) used with a plan or graph captured on another",
     "unsynced-transfer",
     "set the handle's stream to the stream the work belongs to"},
    {N, "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH", 2008, "", false,
     "Tensor shapes in the call or graph do not match each other.",
     "a convolution output tensor whose size does not follow from input, filter, padding, stride and "
     "dilation\n"
     "odd image sizes in a UNet: the upsampled tensor and the skip connection differ by one pixel",
     "",
     "compute output sizes with cudnnGetConvolutionNdForwardOutputDim\n"
     "print the shapes at the failing layer; pad or crop skip connections to match"},
    {N, "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES", 2009, "", false,
     "The same entry (tensor uid, operation) was given twice where each must be unique.",
     "two tensors of a graph with the same uid",
     "",
     "give every tensor in a graph a unique uid"},
    {N, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE", 2010, "", false,
     "A backend attribute was set or read with the wrong attribute type.",
     "cudnnBackendSetAttribute with a type that does not match the attribute",
     "",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH", 2011, "", false,
     "A CUDA graph passed to cuDNN's native CUDA graph API does not match the one cuDNN built for the "
     "plan.",
     "updating a CUDA graph made for another plan or variant pack",
     "",
     "rebuild the CUDA graph with the same plan"},
    {N, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE", 2012, "", false,
     "A descriptor of the wrong type was passed (e.g. a tensor descriptor where an operation was expected).",
     "mixing up backend descriptors",
     "",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_NOT_SUPPORTED", 3000, "", false,
     "No cuDNN engine implements this combination of operation, shapes, data types and layouts on this "
     "GPU. PyTorch adds 'This error may appear if you passed in a non-contiguous input.'",
     "a non-contiguous or channels-last tensor where the engine wants another layout\n"
     "Float64 tensors where only float/half/bf16 engines exist\n"
     "very large tensors (more than 2^31 elements in one tensor)\n"
     "FP16/BF16/FP8 on a GPU architecture that lacks them\n"
     "grouped or dilated convolutions with unusual parameters",
     "float64-leak",
     GPUDIAG_CUDNN_LOG "\n"
     "make inputs contiguous (.contiguous()) and check their dtype\n" GPUDIAG_CUDNN_OFF},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN", 3001, "", false,
     "No engine supports this graph of fused operations.",
     "a fusion pattern (conv + bias + activation + ...) that cuDNN has no engine for",
     "",
     "split the graph into supported patterns\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_SHAPE", 3002, "", false,
     "No engine supports these tensor shapes.",
     "tensors too large for 32-bit indexing\n"
     "channel counts not a multiple of 8 for tensor-core engines in FP16",
     "",
     "pad channels to a multiple of 8, split very large batches\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE", 3003, "", false,
     "No engine supports these data types together.",
     "Float64 tensors in a float model (a double leaking into the input)\n"
     "mixed input/filter types, or a compute type the GPU lacks",
     "float64-leak",
     "check the dtype of inputs and weights at the failing layer"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT", 3004, "", false,
     "No engine supports this memory layout (strides).",
     "a transposed or sliced view passed without .contiguous()\n"
     "NCHW and NHWC tensors mixed in one operation",
     "",
     "make tensors contiguous in the layout the model uses"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", 3005, "", false,
     "The installed driver is too old for this cuDNN.",
     "a cuDNN for CUDA 13 on a driver that supports only CUDA 12",
     "",
     "gpudiag doctor\n"
     "upgrade the driver, or install the cuDNN build for the driver's CUDA major"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART", 3006, "", false,
     "cuDNN was built for another CUDA runtime than the one loaded in the process.",
     "a cuDNN for CUDA 12 loaded by a program built with CUDA 13 (or the reverse)",
     "",
     "gpudiag doctor   # the CUDA major cuDNN was built for against the runtime\n"
     "install the cuDNN build matching the runtime's CUDA major"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", 3007, "", false,
     "The GPU's architecture is not supported by this cuDNN build or operation (the cuDNN 8 name is "
     "CUDNN_STATUS_ARCH_MISMATCH).",
     "an old GPU with a cuDNN that dropped it (CUDA 13 builds no longer support Maxwell, Pascal and "
     "Volta)\n"
     "an FP8 or tensor-core-only engine requested on a GPU without that hardware",
     "",
     "nvidia-smi --query-gpu=name,compute_cap --format=csv\n"
     "check the cuDNN support matrix for the GPU; use an older cuDNN/CUDA for an older GPU"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING", 3008, "", false,
     "A library cuDNN needs at run time is missing or too old: cuBLAS/cuBLASLt for matmul engines, NVRTC "
     "for runtime-compiled engines (the cuDNN 8 name is CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING).",
     "libnvrtc or libcublasLt not on the library path, or of an older CUDA version",
     "",
     "gpudiag doctor\n"
     "ldconfig -p | grep -e nvrtc -e cublasLt"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE", 3009, "", false,
     "The operation lives in a cuDNN sub-library that is not installed (e.g. libcudnn_adv for RNN and "
     "attention).",
     "a slimmed-down image that ships only some libcudnn_*.so files",
     "",
     "install the complete cuDNN package"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT", 3010, "", false,
     "The chosen engine needs more shared memory than the GPU offers per block.",
     "an engine/plan chosen for a larger GPU reused on a smaller one",
     "",
     "let cuDNN's heuristics choose the engine on this GPU"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_PADDING", 3011, "", false,
     "No engine supports this padding configuration.",
     "asymmetric padding or padding larger than the filter",
     "",
     "pad the input explicitly (F.pad) and convolve without padding"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM", 3012, "", false,
     "The kernel launch the engine would need is invalid on this GPU (grid or block too large).",
     "extremely large batch or spatial sizes",
     "",
     "split the batch\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API", 3013, "", false,
     "This plan cannot be turned into a CUDA graph through cuDNN's native CUDA graph API.",
     "an engine without native CUDA graph support",
     "",
     "capture the execution with stream capture instead"},
    {N, "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE", 3014, "", false,
     "The dynamic shape given does not fit the plan's dynamic-shape configuration.",
     "a shape outside the range the plan was built for",
     "",
     "build a plan for the new shape"},
    {N, "CUDNN_STATUS_INTERNAL_ERROR", 4000, "", false,
     "An internal cuDNN operation failed. In training code this is most often a failed GPU memory "
     "allocation inside cuDNN (workspace, handle) reported as an internal error, or the aftermath of an "
     "earlier CUDA error.",
     "GPU memory exhausted (another process, a large batch, a framework that reserved all memory)\n"
     "an earlier sticky CUDA error (illegal memory access) that cuDNN hits first\n"
     "mismatched cuDNN and CUDA versions",
     "out-of-memory premature-free",
     "nvidia-smi   # memory used on the GPU\n"
     "CUDA_LAUNCH_BLOCKING=1 ./train   # whether an earlier kernel failed\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED", 4001, "", false,
     "cuDNN failed to compile a runtime-compiled engine (through NVRTC).",
     "NVRTC missing or of another CUDA version",
     "",
     "gpudiag doctor\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE", 4002, "", false,
     "cuDNN met a value it did not expect internally.",
     "a cuDNN bug, or memory corruption in the process",
     "",
     GPUDIAG_CUDNN_LOG "\n"
     "compute-sanitizer --tool memcheck ./train"},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED", 4003, "", false,
     "A host (CPU) memory allocation inside cuDNN failed (the cuDNN 8 name is CUDNN_STATUS_ALLOC_FAILED).",
     "the process is out of host memory or address space (many DataLoader workers, a memory limit in a "
     "container)",
     "out-of-memory memory-leak",
     "check host memory: free -g; the container's memory limit"},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", 4004, "", false,
     "A GPU memory allocation inside cuDNN failed: out of device memory.",
     "a large workspace request on a GPU that is nearly full",
     "out-of-memory memory-leak",
     "gpudiag trace -- ./train   # then gpudiag report: who holds the memory\n"
     "lower the batch size or limit the workspace"},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM", 4005, "", false,
     "cuDNN computed an invalid kernel launch configuration internally.",
     "extreme tensor sizes",
     "",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED", 4006, "", false,
     "cuDNN failed to create a texture object over a tensor (the cuDNN 8 name is "
     "CUDNN_STATUS_MAPPING_ERROR).",
     "a tensor too large for a texture object, or device memory exhausted",
     "out-of-memory",
     GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_EXECUTION_FAILED", 5000, "", false,
     "A cuDNN kernel failed to launch or run on the GPU. Like a failed CUDA kernel it often reports a "
     "problem with the memory it was given.",
     "data, filter or workspace pointers that are freed, host memory or on another GPU\n"
     "an earlier asynchronous CUDA error surfacing in the cuDNN call\n"
     "GPU out of memory at launch",
     "premature-free device-mismatch unchecked-cuda-error",
     "compute-sanitizer --tool memcheck ./train\n"
     "CUDA_LAUNCH_BLOCKING=1 ./train\n"
     "gpudiag trace -- ./train"},
    {N, "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER", 5001, "", false,
     "A CUDA driver call made by cuDNN failed during execution.",
     "a sticky CUDA error from an earlier kernel; a driver problem",
     "premature-free unchecked-cuda-error",
     "CUDA_LAUNCH_BLOCKING=1 ./train\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS", 5002, "", false,
     "A cuBLAS call made by cuDNN (matmul engines) failed.",
     "cuBLAS missing or of another CUDA version; GPU out of memory",
     "out-of-memory",
     "gpudiag doctor\n" GPUDIAG_CUDNN_LOG},
    {N, "CUDNN_STATUS_EXECUTION_FAILED_CUDART", 5003, "", false,
     "A CUDA runtime call made by cuDNN failed during execution.",
     "an earlier sticky CUDA error (illegal memory access) reported here\n"
     "invalid pointers handed to cuDNN",
     "premature-free device-mismatch",
     "CUDA_LAUNCH_BLOCKING=1 ./train\n"
     "compute-sanitizer --tool memcheck ./train"},
    {N, "CUDNN_STATUS_EXECUTION_FAILED_CURAND", 5004, "", false,
     "A cuRAND call made by cuDNN (dropout) failed.",
     "cuRAND library missing or mismatched; GPU out of memory for the dropout states",
     "",
     "gpudiag doctor\n" GPUDIAG_CUDNN_LOG},
};

#undef GPUDIAG_CUDNN_LOG
#undef GPUDIAG_CUDNN_OFF

constexpr StatusAlias kAliases[] = {
    {"CUDNN_STATUS_ALLOC_FAILED", 4003},
    {"CUDNN_STATUS_ARCH_MISMATCH", 3007},
    {"CUDNN_STATUS_MAPPING_ERROR", 4006},
    {"CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING", 3008},
    {"CUDNN_STATUS_VERSION_MISMATCH", 1002},
};

}  // namespace

std::span<const ErrorEntry> cudnn_statuses() { return kStatuses; }
std::span<const StatusAlias> cudnn_aliases() { return kAliases; }

}  // namespace gpudiag::explain
