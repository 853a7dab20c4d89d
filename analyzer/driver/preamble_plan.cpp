#include "preamble_plan.h"

#include <bit>
#include <cstdint>
#include <map>
#include <set>

namespace gpudiag::lint {
namespace {

// A set of headers, one bit per header of the command.
using Bits = std::vector<std::uint64_t>;

bool subset(const Bits& part, const Bits& whole) {
  for (size_t word = 0; word < part.size(); ++word)
    if (part[word] & ~whole[word]) return false;
  return true;
}

size_t size(const Bits& bits) {
  size_t count = 0;
  for (std::uint64_t word : bits) count += static_cast<size_t>(std::popcount(word));
  return count;
}

}  // namespace

PreamblePlan plan_preambles(const std::vector<std::vector<std::string>>& tops, const HeaderSetCost& cost) {
  PreamblePlan plan;
  plan.preamble_of.assign(tops.size(), -1);
  std::map<std::string, size_t> bit_of;
  for (const auto& top : tops)
    for (const auto& header : top) bit_of.try_emplace(header, bit_of.size());
  const size_t words = (bit_of.size() + 63) / 64;
  std::vector<Bits> sets(tops.size(), Bits(words, 0));
  for (size_t file = 0; file < tops.size(); ++file)
    for (const auto& header : tops[file]) {
      const size_t bit = bit_of.at(header);
      sets[file][bit / 64] |= std::uint64_t{1} << (bit % 64);
    }

  // Candidates in a fixed order, so that a tie goes the same way every run.
  std::vector<Bits> candidates;
  std::set<Bits> known;
  auto consider = [&](const Bits& bits) {
    if (size(bits) > 0 && known.insert(bits).second) candidates.push_back(bits);
  };
  for (const Bits& set : sets) consider(set);
  const size_t distinct = candidates.size();
  for (size_t a = 0; a < distinct; ++a)
    for (size_t b = a + 1; b < distinct; ++b) {
      Bits common(words);
      for (size_t word = 0; word < words; ++word) common[word] = candidates[a][word] & candidates[b][word];
      consider(common);
    }

  std::vector<std::string> header_of(bit_of.size());
  for (const auto& [header, bit] : bit_of) header_of[bit] = header;
  std::vector<std::uint64_t> costs;
  for (const Bits& candidate : candidates) {
    if (!cost) {
      costs.push_back(size(candidate));
      continue;
    }
    std::vector<std::string> headers;
    for (size_t bit = 0; bit < header_of.size(); ++bit)
      if (candidate[bit / 64] >> (bit % 64) & 1) headers.push_back(header_of[bit]);
    costs.push_back(cost(headers));
  }

  // Each step shares the candidate that saves the most over what the files
  // that include it all already save (their current preamble's cost), less
  // building it once; those files move to it.
  std::vector<std::uint64_t> saved(tops.size(), 0);
  while (true) {
    size_t best = candidates.size();
    std::uint64_t best_saving = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      std::uint64_t gain = 0;
      for (size_t file = 0; file < tops.size(); ++file)
        if (costs[c] > saved[file] && subset(candidates[c], sets[file])) gain += costs[c] - saved[file];
      const std::uint64_t saving = gain > costs[c] ? gain - costs[c] : 0;
      if (saving > best_saving) {
        best = c;
        best_saving = saving;
      }
    }
    if (best == candidates.size()) break;
    const int number = static_cast<int>(plan.preambles.size());
    plan.preambles.emplace_back();
    for (size_t file = 0; file < tops.size(); ++file) {
      if (costs[best] <= saved[file] || !subset(candidates[best], sets[file])) continue;
      if (plan.preambles.back().empty())  // in the order its first file includes them
        for (const auto& header : tops[file]) {
          const size_t bit = bit_of.at(header);
          if (candidates[best][bit / 64] >> (bit % 64) & 1) plan.preambles.back().push_back(header);
        }
      plan.preamble_of[file] = number;
      saved[file] = costs[best];
    }
  }
  // Preambles whose every file moved to a larger one.
  std::vector<int> renumbered(plan.preambles.size(), -1);
  std::vector<std::vector<std::string>> kept;
  for (int& preamble : plan.preamble_of) {
    if (preamble < 0) continue;
    if (renumbered[static_cast<size_t>(preamble)] < 0) {
      renumbered[static_cast<size_t>(preamble)] = static_cast<int>(kept.size());
      kept.push_back(std::move(plan.preambles[static_cast<size_t>(preamble)]));
    }
    preamble = renumbered[static_cast<size_t>(preamble)];
  }
  plan.preambles = std::move(kept);

  size_t left = 0;
  for (int preamble : plan.preamble_of) left += preamble < 0;
  if (left > 1) {
    const int number = static_cast<int>(plan.preambles.size());
    plan.preambles.emplace_back();
    for (int& preamble : plan.preamble_of)
      if (preamble < 0) preamble = number;
  }
  return plan;
}

}  // namespace gpudiag::lint
