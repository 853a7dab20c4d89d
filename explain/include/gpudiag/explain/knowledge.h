// The knowledge base behind `gpudiag explain`: what CUDA runtime/driver
// errors, cuDNN statuses and cuBLAS statuses mean in training code. It is
// compiled in (one table per library) so the binary needs no data files.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpudiag::explain {

enum class Library { CudaRuntime, CudaDriver, Cudnn, Cublas };

// "CUDA runtime", "CUDA driver", "cuDNN", "cuBLAS".
std::string_view to_string(Library library);

struct ErrorEntry {
  Library library;
  std::string_view name;     // as in the header: cudaErrorIllegalAddress, CUDNN_STATUS_BAD_PARAM
  int code;                  // its numeric value in that header
  std::string_view message;  // the library's own text (cudaGetErrorString, cublasGetStatusString); may be empty
  bool sticky;               // corrupts the CUDA context: every later call fails, the process must restart
  // The explanation. An entry with an empty `meaning` is a reference row
  // only (name, number, library text): gpudiag has nothing of its own to say.
  std::string_view meaning;
  std::string_view causes;  // one cause per line
  std::string_view rules;   // rule names from the catalogue, space separated
  std::string_view next;    // what to run next, one step per line

  bool explained() const { return !meaning.empty(); }
};

// A CUresult of the driver API. Its explanation is the runtime entry with the
// same number when one exists (both APIs share the numbering), else `own`.
struct DriverCode {
  std::string_view name;  // CUDA_ERROR_ILLEGAL_ADDRESS
  int code;
};

// A deprecated alias kept by a newer header (cuDNN 9 maps
// CUDNN_STATUS_ALLOC_FAILED onto CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED).
struct StatusAlias {
  std::string_view name;
  int code;
};

// Tables, each ordered by code. Defined in cuda_errors_*.cpp,
// cuda_driver_errors.cpp, cudnn_status.cpp and cublas_status.cpp.
std::span<const ErrorEntry> cuda_runtime_errors();
std::span<const DriverCode> cuda_driver_codes();
std::span<const ErrorEntry> cuda_driver_only_errors();  // CUresults without a runtime twin
std::span<const ErrorEntry> cudnn_statuses();
std::span<const StatusAlias> cudnn_aliases();
std::span<const ErrorEntry> cublas_statuses();

const ErrorEntry* find_cuda_runtime_error(int code);
const ErrorEntry* find_cuda_runtime_error(std::string_view name);  // case-insensitive
// The driver's CUresult name for a runtime code, or empty when none.
std::string_view driver_name_for(int code);
// The explanation for a CUresult by code: the runtime twin or a driver-only entry.
const ErrorEntry* find_cuda_driver_error(int code);
const ErrorEntry* find_cudnn_status(int code);
const ErrorEntry* find_cublas_status(int code);

// Splits the one-per-line / space-separated fields.
std::vector<std::string_view> lines_of(std::string_view text);
std::vector<std::string_view> words_of(std::string_view text);

}  // namespace gpudiag::explain
