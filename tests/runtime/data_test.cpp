// DataLoader: batching, seeded shuffling, workers, prefetch, transfer hook.
#include <gtest/gtest.h>

#include <atomic>

#include "test_support.h"

namespace gdrt {
namespace {

class Squares : public data::Dataset {
 public:
  explicit Squares(std::int64_t n, std::int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  std::int64_t size() const override { return n_; }
  data::Example get(std::int64_t i) const override {
    if (i == fail_at_) throw Error("example " + std::to_string(i) + " is unreadable");
    return {full({2}, static_cast<double>(i)), full({}, static_cast<double>(i * i))};
  }

 private:
  std::int64_t n_, fail_at_;
};

data::LoaderOptions batches_of(std::int64_t n) {
  data::LoaderOptions o;
  o.batch_size = n;
  return o;
}

std::vector<std::int64_t> epoch_order(data::DataLoader& loader, std::int64_t epoch) {
  std::vector<std::int64_t> order;
  loader.start_epoch(epoch);
  while (auto b = loader.next())
    for (auto i : b->indices) order.push_back(i);
  return order;
}

TEST(DataLoader, BatchesInOrderWithoutShuffle) {
  data::DataLoader loader(std::make_shared<Squares>(10), batches_of(4));
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  loader.start_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->input.shape(), (Shape{4, 2}));
  EXPECT_EQ(b->target.to_vector<float>(), (std::vector<float>{0, 1, 4, 9}));
  loader.next();
  EXPECT_EQ(loader.next()->input.shape(), (Shape{2, 2}));  // the short last batch
  EXPECT_FALSE(loader.next());
  data::LoaderOptions drop = batches_of(4);
  drop.drop_last = true;
  EXPECT_EQ(data::DataLoader(std::make_shared<Squares>(10), drop).batches_per_epoch(), 2);
}

TEST(DataLoader, ShuffleIsSeededAndWorkersKeepTheOrder) {
  data::LoaderOptions o = batches_of(3);
  o.shuffle = true;
  o.seed = 11;
  data::DataLoader serial(std::make_shared<Squares>(20), o);
  o.workers = 3;
  o.prefetch = 2;
  data::DataLoader parallel(std::make_shared<Squares>(20), o);
  auto e0 = epoch_order(serial, 0), e1 = epoch_order(serial, 1);
  EXPECT_NE(e0, e1);
  std::vector<std::int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 20; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(epoch_order(parallel, 0), e0);
  EXPECT_EQ(epoch_order(parallel, 1), e1);
}

TEST(DataLoader, TransferHookRunsOnEveryBatch) {
  data::LoaderOptions o = batches_of(5);
  o.workers = 2;
  std::atomic<int> calls{0};
  o.transfer = [&](data::Batch b) {
    ++calls;
    b.input = b.input.to(test::emu_device());
    return b;
  };
  data::DataLoader loader(std::make_shared<Squares>(10), o);
  loader.start_epoch(0);
  while (auto b = loader.next()) EXPECT_EQ(b->input.device(), test::emu_device());
  EXPECT_EQ(calls.load(), 2);
}

TEST(DataLoader, WorkerErrorsReachTheConsumer) {
  data::LoaderOptions o = batches_of(2);
  o.workers = 2;
  data::DataLoader loader(std::make_shared<Squares>(6, 3), o);
  loader.start_epoch(0);
  EXPECT_TRUE(loader.next());
  EXPECT_THROW(loader.next(), Error);
  EXPECT_TRUE(loader.next());  // later batches still arrive
  EXPECT_THROW(data::DataLoader(std::make_shared<Squares>(3), batches_of(0)), Error);
}

}  // namespace
}  // namespace gdrt
