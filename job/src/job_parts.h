// The parts of merge_job, each in its own file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpudiag/job/job_report.h"

namespace gpudiag::detail {

// ranks[index]'s name in the report: its rank, or its place when the job is not ranked.
std::int32_t member_id(const JobReport& job, std::size_t index);
// "ranks 0–2, 4" or "trace 1".
std::string members(const JobReport& job, const std::vector<std::int32_t>& ids);
// "all_reduce #12 (group 0)"
std::string collective_label(const RankCollective& c);
// The median of values (0 for none).
std::uint64_t median(std::vector<std::uint64_t> values);

std::optional<FirstFailure> find_first_failure(const JobReport& job, const JobOptions& options);
std::optional<Desync> find_desync(const JobReport& job);
std::optional<Straggler> find_straggler(const JobReport& job, const JobOptions& options);

}  // namespace gpudiag::detail
