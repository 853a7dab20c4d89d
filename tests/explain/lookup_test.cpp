// What `gpudiag explain` makes of what users type.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpudiag/explain/lookup.h"

namespace gpudiag::explain {
namespace {

using Kind = LookupResult::Kind;

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

TEST(Lookup, RulesByIdAnyCaseAndByName) {
  for (const char* q : {"GD004", "gd004", "premature-free", "  GD004 "}) {
    auto r = lookup(q);
    ASSERT_EQ(r.kind, Kind::Rule) << q;
    EXPECT_EQ(r.rule->id, "GD004");
  }
}

TEST(Lookup, RuntimeErrorByNumberAndName) {
  auto by_number = lookup("700");
  ASSERT_EQ(by_number.kind, Kind::Error);
  EXPECT_EQ(by_number.error.entry->name, "cudaErrorIllegalAddress");
  EXPECT_TRUE(by_number.error.alias.empty());
  auto by_name = lookup("cudaerrorillegaladdress");
  ASSERT_EQ(by_name.kind, Kind::Error);
  EXPECT_EQ(by_name.error.entry, by_number.error.entry);
  EXPECT_EQ(lookup("0x2bc").error.entry, by_number.error.entry);
}

TEST(Lookup, ANumberSharedWithOtherLibrariesMentionsThem) {
  auto r = lookup("1");
  ASSERT_EQ(r.kind, Kind::Error);
  EXPECT_EQ(r.error.entry->name, "cudaErrorInvalidValue");
  EXPECT_NE(joined(r.notes).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << joined(r.notes);
  auto nine = lookup("9");
  EXPECT_NE(joined(nine.notes).find("no CUresult"), std::string::npos) << joined(nine.notes);
}

TEST(Lookup, NumbersOutsideCudaFindCudnnOrDriverOnlyCodes) {
  EXPECT_EQ(lookup("2000").error.entry->name, "CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(lookup("202").error.entry->name, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT");
  auto none = lookup("12345");
  EXPECT_EQ(none.kind, Kind::Unknown);
  EXPECT_NE(joined(none.notes).find("12345"), std::string::npos);
  EXPECT_EQ(lookup("-1").kind, Kind::Unknown);
}

TEST(Lookup, DriverNamesReachTheRuntimeExplanation) {
  auto r = lookup("CUDA_ERROR_LAUNCH_FAILED");
  ASSERT_EQ(r.kind, Kind::Error);
  EXPECT_EQ(r.error.entry->name, "cudaErrorLaunchFailure");
  EXPECT_EQ(r.error.alias, "CUDA_ERROR_LAUNCH_FAILED");
}

TEST(Lookup, ShortFormsWhenUnambiguous) {
  EXPECT_EQ(lookup("BAD_PARAM").error.entry->name, "CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(lookup("bad-param").error.entry->name, "CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(lookup("IllegalAddress").error.entry->name, "cudaErrorIllegalAddress");
  EXPECT_EQ(lookup("ILLEGAL_ADDRESS").error.entry->name, "cudaErrorIllegalAddress");
  EXPECT_EQ(lookup("MAPPING_ERROR").kind, Kind::Ambiguous);  // cuDNN alias and cuBLAS status
}

TEST(Lookup, AmbiguousShortFormsListEveryCandidate) {
  auto r = lookup("NOT_SUPPORTED");
  ASSERT_EQ(r.kind, Kind::Ambiguous);
  const std::string all = joined(r.candidates);
  EXPECT_NE(all.find("CUDNN_STATUS_NOT_SUPPORTED"), std::string::npos);
  EXPECT_NE(all.find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos);
  EXPECT_NE(all.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos);
}

TEST(Lookup, CudnnDeprecatedAliasesResolveWithANote) {
  auto r = lookup("CUDNN_STATUS_ALLOC_FAILED");
  ASSERT_EQ(r.kind, Kind::Error);
  EXPECT_EQ(r.error.entry->code, 4003);
  EXPECT_EQ(r.error.alias, "CUDNN_STATUS_ALLOC_FAILED");
  EXPECT_NE(joined(r.notes).find("deprecated"), std::string::npos);
  EXPECT_EQ(lookup("CUDNN_STATUS_ARCH_MISMATCH").error.entry->code, 3007);
}

TEST(Lookup, MessagesAsPrintedByFrameworks) {
  EXPECT_EQ(lookup("an illegal memory access was encountered").error.entry->code, 700);
  EXPECT_EQ(lookup("RuntimeError: CUDA error: an illegal memory access was encountered").error.entry->code, 700);
  EXPECT_EQ(lookup("CUDA error: invalid program counter").error.entry->code, 718);
  EXPECT_EQ(lookup("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB").error.entry->code, 2);
  EXPECT_EQ(lookup("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in "
                   "a non-contiguous input.")
                .error.entry->name,
            "CUDNN_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(lookup("the function failed to launch on the GPU").error.entry->name, "CUBLAS_STATUS_EXECUTION_FAILED");
}

TEST(Lookup, ADuplicatedMessageNamesTheOtherCode) {
  auto r = lookup("device kernel image is invalid");
  ASSERT_EQ(r.kind, Kind::Error);
  EXPECT_EQ(r.error.entry->code, 200);
  EXPECT_NE(joined(r.notes).find("cudaErrorInvalidSource"), std::string::npos);
}

TEST(Lookup, UnknownInputGetsTheClosestNames) {
  auto r = lookup("cudaErrorIlegalAddress");
  ASSERT_EQ(r.kind, Kind::Unknown);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_EQ(r.candidates.front(), "cudaErrorIllegalAddress");
  auto rule = lookup("premature-fre");
  ASSERT_EQ(rule.kind, Kind::Unknown);
  EXPECT_NE(std::find(rule.candidates.begin(), rule.candidates.end(), "premature-free"), rule.candidates.end());
  EXPECT_EQ(lookup("GD04").candidates.front(), "GD004");
  EXPECT_EQ(lookup("").kind, Kind::Unknown);
  EXPECT_TRUE(lookup("qqqqqqqqqqqqqqqqqqqqqq").candidates.empty());
}

TEST(Lookup, ClosestNamesRespectsTheLimitAndFindsShortFormTypos) {
  EXPECT_LE(closest_names("illegal", 3).size(), 3u);
  auto typo = closest_names("BAD_PARM");
  EXPECT_NE(std::find(typo.begin(), typo.end(), "CUDNN_STATUS_BAD_PARAM"), typo.end());
}

TEST(Lookup, LongAndBinaryInputIsHandled) {
  const std::string log(20000, 'x');
  EXPECT_EQ(lookup(log).kind, Kind::Unknown);
  EXPECT_EQ(lookup(std::string("\xff\xfe\x00\x01", 4)).kind, Kind::Unknown);
  EXPECT_EQ(lookup(log + " an illegal memory access was encountered").error.entry->code, 700);
}

TEST(Lookup, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ABC", "abc"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

}  // namespace
}  // namespace gpudiag::explain
