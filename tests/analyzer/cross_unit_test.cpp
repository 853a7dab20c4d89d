// Settling what one translation unit leaves to the others (cross_unit.h).
#include "cross_unit.h"

#include <gtest/gtest.h>

namespace gpudiag::lint {
namespace {

const std::string kFact = "the last error is read";

TEST(CrossUnitCondition, NeverWinsAndFunctionsAccumulate) {
  CrossUnitCondition condition = CrossUnitCondition::always();
  EXPECT_TRUE(condition.holds_outright());
  condition &= CrossUnitCondition::after_every_call_of("c:@F@a#");
  condition &= CrossUnitCondition::after_every_call_of("c:@F@b#");
  EXPECT_FALSE(condition.settled());
  EXPECT_EQ(condition.after_calls_of.size(), 2u);
  condition &= CrossUnitCondition::none();
  EXPECT_TRUE(condition.never);
  EXPECT_TRUE(condition.settled());
  EXPECT_TRUE(condition.after_calls_of.empty());
}

TEST(CrossUnitFacts, HoldsOnlyWhenEveryCallDoes) {
  CrossUnitFacts facts;
  const auto after_helper = CrossUnitCondition::after_every_call_of("c:@F@helper#");
  EXPECT_FALSE(facts.holds(kFact, after_helper)) << "a function no unit calls holds nothing";
  facts.add_call(kFact, "c:@F@helper#", CrossUnitCondition::always());
  EXPECT_TRUE(facts.holds(kFact, after_helper));
  EXPECT_FALSE(facts.holds("another fact", after_helper)) << "facts are kept apart";
  facts.add_call(kFact, "c:@F@helper#", CrossUnitCondition::none());
  EXPECT_FALSE(facts.holds(kFact, after_helper));
}

TEST(CrossUnitFacts, FollowsCallersThroughOtherFunctions) {
  CrossUnitFacts facts;
  // helper is called from run in another unit, with nothing after it there;
  // run is called from main, which checks.
  facts.add_call(kFact, "c:@F@helper#", CrossUnitCondition::after_every_call_of("c:@F@run#"));
  facts.add_call(kFact, "c:@F@run#", CrossUnitCondition::always());
  EXPECT_TRUE(facts.holds(kFact, CrossUnitCondition::after_every_call_of("c:@F@helper#")));
  facts.add_call(kFact, "c:@F@run#", CrossUnitCondition::after_every_call_of("c:@F@uncalled#"));
  EXPECT_FALSE(facts.holds(kFact, CrossUnitCondition::after_every_call_of("c:@F@helper#")));
}

TEST(CrossUnitFacts, ACycleHoldsNothingAndDoesNotHang) {
  CrossUnitFacts facts;
  facts.add_call(kFact, "c:@F@a#", CrossUnitCondition::after_every_call_of("c:@F@b#"));
  facts.add_call(kFact, "c:@F@b#", CrossUnitCondition::after_every_call_of("c:@F@a#"));
  EXPECT_FALSE(facts.holds(kFact, CrossUnitCondition::after_every_call_of("c:@F@a#")));
}

TEST(CrossUnitFacts, SettleTakesTheFirstAlternativeThatHolds) {
  CrossUnitFacts facts;
  facts.add_call("synchronised", "c:@F@helper#", CrossUnitCondition::always());
  facts.add_call(kFact, "c:@F@helper#", CrossUnitCondition::none());
  DeferredFinding deferred;
  deferred.finding.rule_id = "GD006";
  deferred.finding.message = "never checked";
  const auto after_helper = CrossUnitCondition::after_every_call_of("c:@F@helper#");
  deferred.alternatives.push_back({kFact, after_helper, std::nullopt});
  deferred.alternatives.push_back({"synchronised", after_helper, "checked only by a synchronisation"});
  auto settled = facts.settle(deferred);
  ASSERT_TRUE(settled);
  EXPECT_EQ(settled->message, "checked only by a synchronisation");
  EXPECT_EQ(settled->rule_id, "GD006");

  facts.add_call(kFact, "c:@F@other#", CrossUnitCondition::always());
  deferred.alternatives[0].condition = CrossUnitCondition::after_every_call_of("c:@F@other#");
  EXPECT_FALSE(facts.settle(deferred)) << "an alternative without a message drops the finding";

  deferred.alternatives.clear();
  settled = facts.settle(deferred);
  ASSERT_TRUE(settled);
  EXPECT_EQ(settled->message, "never checked");
}

// GD007's leak through another file's helper is true only when that file
// says the helper only uses the buffer: with no word, nothing is reported.
TEST(CrossUnitFacts, AFindingThatNeedsAFactIsDroppedWithoutIt) {
  CrossUnitFacts facts;
  DeferredFinding deferred;
  deferred.finding.message = "leaked";
  deferred.reported_when_none_holds = false;
  deferred.alternatives.push_back({"only uses", CrossUnitCondition::after_every_call_of("_Z7forwardPf#0"), "leaked"});
  EXPECT_FALSE(facts.settle(deferred));
  facts.add_call("only uses", "_Z7forwardPf#0", CrossUnitCondition::always());
  ASSERT_TRUE(facts.settle(deferred));
  EXPECT_EQ(facts.settle(deferred)->message, "leaked");
}

}  // namespace
}  // namespace gpudiag::lint
