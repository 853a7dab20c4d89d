// clang-tidy style suppression comments: NOLINT, NOLINT(GD004,premature-free),
// NOLINTNEXTLINE(...), NOLINTBEGIN(...) ... NOLINTEND(...).
#pragma once

#include <string_view>

namespace gpudiag::lint {

// true when a finding of rule (id, name) on 1-based `line` of the file whose
// whole text is `buffer` is suppressed by a comment.
bool is_suppressed(std::string_view buffer, unsigned line, std::string_view rule_id, std::string_view rule_name);

}  // namespace gpudiag::lint
