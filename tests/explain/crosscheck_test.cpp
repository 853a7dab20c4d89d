// The compiled-in tables against the CUDA 13 toolkit itself: every enumerator
// of the headers is in the tables with the same number, and the messages are
// the ones the libraries return. Needs the toolkit, not a GPU: the calls are
// table lookups inside libcudart, libcudnn and libcublas.
#include <gtest/gtest.h>

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The body of `typedef enum ... { body } <name>` or `enum <tag> { body }`.
std::string enum_body(const std::string& text, const std::string& start_marker, const std::string& end_marker) {
  auto begin = text.find(start_marker);
  if (begin == std::string::npos) return {};
  begin = text.find('{', begin);
  auto end = text.find(end_marker, begin);
  return text.substr(begin, end - begin);
}

// NAME = value pairs; values may name an earlier enumerator.
std::map<std::string, int> enumerators(const std::string& body, const std::string& prefix) {
  std::map<std::string, int> out;
  const std::regex entry("(" + prefix + "\\w*)(?:\\s+CUDNN_DEPRECATED_ENUM)?\\s*=\\s*(\\w+)");
  for (std::sregex_iterator it(body.begin(), body.end(), entry), end; it != end; ++it) {
    const std::string name = (*it)[1], value = (*it)[2];
    if (std::isdigit(static_cast<unsigned char>(value[0]))) {
      out[name] = std::stoi(value);
    } else if (auto earlier = out.find(value); earlier != out.end()) {
      out[name] = earlier->second;
    }
  }
  return out;
}

TEST(Crosscheck, RuntimeTableIsExactlyTheHeadersEnum) {
  const std::string body = enum_body(read_file(GPUDIAG_DRIVER_TYPES_H), "enum __device_builtin__ cudaError", "};");
  auto header = enumerators(body, "cudaError");
  ASSERT_GT(header.size(), 100u) << "could not parse " << GPUDIAG_DRIVER_TYPES_H;
  header.erase("cudaErrorApiFailureBase");  // a base value, not an error
  std::size_t expected = 0;
  for (const auto& [name, code] : header) {
    if (code == 0) continue;
    ++expected;
    const ErrorEntry* e = find_cuda_runtime_error(name);
    ASSERT_NE(e, nullptr) << name << " (" << code << ") is missing from the table";
    EXPECT_EQ(e->code, code) << name;
  }
  EXPECT_EQ(cuda_runtime_errors().size(), expected);
}

TEST(Crosscheck, RuntimeNamesAndMessagesAreTheLibrarys) {
  for (const auto& e : cuda_runtime_errors()) {
    const auto code = static_cast<cudaError_t>(e.code);
    EXPECT_EQ(std::string(cudaGetErrorName(code)), e.name);
    EXPECT_EQ(std::string(cudaGetErrorString(code)), e.message) << e.name;
  }
}

TEST(Crosscheck, DriverTableIsExactlyCuResult) {
  const std::string body = enum_body(read_file(GPUDIAG_CUDA_H), "typedef enum cudaError_enum", "} CUresult;");
  auto header = enumerators(body, "CUDA_");
  header.erase("CUDA_SUCCESS");
  ASSERT_GT(header.size(), 90u);
  EXPECT_EQ(cuda_driver_codes().size(), header.size());
  for (const auto& d : cuda_driver_codes()) {
    auto it = header.find(std::string(d.name));
    ASSERT_NE(it, header.end()) << d.name;
    EXPECT_EQ(it->second, d.code) << d.name;
    EXPECT_NE(find_cuda_driver_error(d.code), nullptr) << d.name << " has no explanation";
  }
}

TEST(Crosscheck, CudnnStatusesAndAliasesAreTheHeaders) {
  const std::string text = read_file(GPUDIAG_CUDNN_GRAPH_H);
  const auto begin = text.find("CUDNN_STATUS_SUCCESS");
  ASSERT_NE(begin, std::string::npos) << GPUDIAG_CUDNN_GRAPH_H;
  auto header = enumerators(text.substr(begin, text.find("} cudnnStatus_t;", begin) - begin), "CUDNN_STATUS_");
  header.erase("CUDNN_STATUS_SUCCESS");
  ASSERT_GT(header.size(), 40u);
  std::size_t found = 0;
  for (const auto& [name, code] : header) {
    bool is_alias = false;
    for (const auto& a : cudnn_aliases()) {
      if (a.name == name) {
        is_alias = true;
        EXPECT_EQ(a.code, code) << name;
      }
    }
    if (is_alias) continue;
    const ErrorEntry* e = find_cudnn_status(code);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->name, name);
    ++found;
  }
  EXPECT_EQ(found, cudnn_statuses().size());
  for (const auto& e : cudnn_statuses()) {
    EXPECT_EQ(std::string(cudnnGetErrorString(static_cast<cudnnStatus_t>(e.code))), e.name);
  }
}

TEST(Crosscheck, CublasStatusesAreTheHeaders) {
  const std::pair<cublasStatus_t, const char*> statuses[] = {
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH"},
      {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
      {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR"},
  };
  EXPECT_EQ(cublas_statuses().size(), std::size(statuses));
  for (const auto& [status, name] : statuses) {
    const ErrorEntry* e = find_cublas_status(static_cast<int>(status));
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->name, name);
    EXPECT_EQ(std::string(cublasGetStatusName(status)), name);
    EXPECT_EQ(std::string(cublasGetStatusString(status)), e->message);
  }
}

}  // namespace
}  // namespace gpudiag::explain
