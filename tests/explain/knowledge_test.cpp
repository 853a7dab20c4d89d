// The knowledge base's own consistency: rules exist, entries are complete,
// the codes the issue names are explained, sticky errors are marked.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gpudiag/catalogue.h"
#include "gpudiag/explain/knowledge.h"

namespace gpudiag::explain {
namespace {

std::vector<const ErrorEntry*> every_entry() {
  std::vector<const ErrorEntry*> all;
  for (const auto& e : cuda_runtime_errors()) all.push_back(&e);
  for (const auto& e : cuda_driver_only_errors()) all.push_back(&e);
  for (const auto& e : cudnn_statuses()) all.push_back(&e);
  for (const auto& e : cublas_statuses()) all.push_back(&e);
  return all;
}

TEST(Knowledge, EveryRuleAnEntryPointsAtExistsInTheCatalogue) {
  for (const auto* e : every_entry()) {
    for (auto name : words_of(e->rules)) {
      EXPECT_NE(find_rule(name), nullptr) << e->name << " points at unknown rule '" << name << "'";
    }
  }
}

TEST(Knowledge, ExplainedEntriesHaveCausesAndNextSteps) {
  for (const auto* e : every_entry()) {
    if (!e->explained()) continue;
    EXPECT_FALSE(lines_of(e->causes).empty()) << e->name;
    EXPECT_FALSE(lines_of(e->next).empty()) << e->name;
  }
}

TEST(Knowledge, ReferenceRowsAreOnlyCudaRuntimeRowsWithTheLibraryMessage) {
  for (const auto* e : every_entry()) {
    if (e->explained()) continue;
    EXPECT_EQ(e->library, Library::CudaRuntime) << e->name;
    EXPECT_FALSE(e->message.empty()) << e->name;
    EXPECT_TRUE(e->causes.empty() && e->rules.empty() && e->next.empty()) << e->name;
  }
}

TEST(Knowledge, TheErrorsUsersMeetMostAreExplained) {
  for (int code : {1, 2, 3, 17, 35, 98, 100, 101, 209, 700, 701, 710, 716, 718, 719, 999}) {
    const ErrorEntry* e = find_cuda_runtime_error(code);
    ASSERT_NE(e, nullptr) << code;
    EXPECT_TRUE(e->explained()) << e->name;
  }
  std::size_t explained = 0;
  for (const auto& e : cuda_runtime_errors()) explained += e.explained() ? 1 : 0;
  EXPECT_GE(explained, 40u);
  for (const auto& e : cudnn_statuses()) EXPECT_TRUE(e.explained()) << e.name;
  for (const auto& e : cublas_statuses()) EXPECT_TRUE(e.explained()) << e.name;
}

TEST(Knowledge, KernelFaultsAreStickyAndApiErrorsAreNot) {
  for (int code : {700, 710, 714, 715, 716, 717, 718, 719}) {
    EXPECT_TRUE(find_cuda_runtime_error(code)->sticky) << code;
  }
  for (int code : {1, 2, 17, 35, 100, 701}) {
    EXPECT_FALSE(find_cuda_runtime_error(code)->sticky) << code;
  }
}

TEST(Knowledge, NamesAndCodesAreUniqueWithinALibrary) {
  for (auto table : {cuda_runtime_errors(), cudnn_statuses(), cublas_statuses()}) {
    std::set<int> codes;
    std::set<std::string_view> names;
    for (const auto& e : table) {
      EXPECT_TRUE(codes.insert(e.code).second) << e.name;
      EXPECT_TRUE(names.insert(e.name).second) << e.name;
    }
  }
  std::set<std::string_view> driver_names;
  for (const auto& d : cuda_driver_codes()) EXPECT_TRUE(driver_names.insert(d.name).second) << d.name;
}

TEST(Knowledge, RuntimeTableIsOrderedByCode) {
  auto table = cuda_runtime_errors();
  for (std::size_t i = 1; i < table.size(); ++i) EXPECT_LT(table[i - 1].code, table[i].code);
}

TEST(Knowledge, DriverCodesMapToTheirRuntimeTwin) {
  EXPECT_EQ(driver_name_for(700), "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(driver_name_for(719), "CUDA_ERROR_LAUNCH_FAILED");
  EXPECT_EQ(find_cuda_driver_error(700)->name, "cudaErrorIllegalAddress");
  EXPECT_EQ(find_cuda_driver_error(2)->name, "cudaErrorMemoryAllocation");
  EXPECT_EQ(driver_name_for(9), "");  // cudaErrorInvalidConfiguration has no CUresult
  EXPECT_EQ(find_cuda_driver_error(9), nullptr);
  const ErrorEntry* only = find_cuda_driver_error(202);
  ASSERT_NE(only, nullptr);
  EXPECT_EQ(only->library, Library::CudaDriver);
  EXPECT_EQ(only->name, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT");
  for (const auto& e : cuda_driver_only_errors()) EXPECT_EQ(find_cuda_runtime_error(e.code), nullptr) << e.name;
}

TEST(Knowledge, CudnnAliasesPointAtExistingStatuses) {
  ASSERT_FALSE(cudnn_aliases().empty());
  for (const auto& a : cudnn_aliases()) {
    const ErrorEntry* target = find_cudnn_status(a.code);
    ASSERT_NE(target, nullptr) << a.name;
    EXPECT_NE(target->name, a.name);
  }
  EXPECT_EQ(find_cudnn_status(2000)->name, "CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(find_cublas_status(13)->name, "CUBLAS_STATUS_EXECUTION_FAILED");
}

TEST(Knowledge, SplittersDropEmptyPieces) {
  EXPECT_EQ(lines_of("a\n\nb\n"), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(words_of("  x  y "), (std::vector<std::string_view>{"x", "y"}));
  EXPECT_TRUE(lines_of("").empty());
}

}  // namespace
}  // namespace gpudiag::explain
