// DataLoader: workers claim batch numbers in order, build them, and park
// them in `ready_`; the consumer takes them strictly in order. Workers never
// run more than `prefetch` batches ahead of the consumer.
#include "gdrt/data.h"

#include <algorithm>
#include <numeric>

#include "core/impl.h"
#include "gdrt/ops.h"

namespace gdrt::data {

Tensor stack(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw Error("stack: needs at least one tensor");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) {
    if (t.shape() != tensors.front().shape())
      throw Error("stack: examples have different shapes " + shape_str(tensors.front().shape()) + " and " +
                  shape_str(t.shape()));
    parts.push_back(t.unsqueeze(0));
  }
  return cat(parts, 0);
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  if (!dataset_) throw Error("DataLoader: null dataset");
  if (options_.batch_size < 1) throw Error("DataLoader: batch_size must be >= 1");
  if (options_.workers < 0 || options_.prefetch < 1) throw Error("DataLoader: workers >= 0 and prefetch >= 1 required");
}

DataLoader::~DataLoader() { stop_workers(); }

std::int64_t DataLoader::batches_per_epoch() const {
  const std::int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Batch DataLoader::build(std::int64_t batch) const {
  const std::int64_t begin = batch * options_.batch_size;
  const std::int64_t end = std::min<std::int64_t>(begin + options_.batch_size, static_cast<std::int64_t>(order_.size()));
  std::vector<Tensor> inputs, targets;
  Batch out;
  NoGrad ng;
  for (std::int64_t i = begin; i < end; ++i) {
    const std::int64_t idx = order_[static_cast<std::size_t>(i)];
    Example e = dataset_->get(idx);
    inputs.push_back(e.input);
    if (e.target.defined()) targets.push_back(e.target);
    out.indices.push_back(idx);
  }
  out.input = stack(inputs);
  if (!targets.empty()) out.target = stack(targets);
  if (options_.pin_memory) {
    const Device accelerator = options_.pin_for.value_or(preferred_device());
    out.input = out.input.pin_memory(accelerator);
    if (out.target.defined()) out.target = out.target.pin_memory(accelerator);
  }
  if (options_.transfer) out = options_.transfer(std::move(out));
  return out;
}

void DataLoader::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  stopping_ = false;
}

void DataLoader::start_epoch(std::int64_t epoch) {
  stop_workers();
  order_.resize(static_cast<std::size_t>(dataset_->size()));
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    Generator gen(options_.seed + static_cast<std::uint64_t>(epoch));
    for (std::size_t i = order_.size(); i > 1; --i)  // Fisher-Yates
      std::swap(order_[i - 1], order_[gen.next_u64() % i]);
  }
  ready_.clear();
  errors_.clear();
  next_to_build_ = next_to_yield_ = 0;
  total_ = batches_per_epoch();
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
}

void DataLoader::worker_loop() {
  for (;;) {
    std::int64_t mine;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] {
        return stopping_ || next_to_build_ >= total_ || next_to_build_ < next_to_yield_ + options_.prefetch;
      });
      if (stopping_ || next_to_build_ >= total_) return;
      mine = next_to_build_++;
    }
    try {
      Batch b = build(mine);
      std::lock_guard lock(mutex_);
      ready_[mine] = std::move(b);
    } catch (...) {
      std::lock_guard lock(mutex_);
      errors_[mine] = std::current_exception();
    }
    cv_.notify_all();
  }
}

std::optional<Batch> DataLoader::next() {
  if (next_to_yield_ >= total_) return std::nullopt;
  if (threads_.empty()) return build(next_to_yield_++);
  std::unique_lock lock(mutex_);
  const std::int64_t want = next_to_yield_;
  cv_.wait(lock, [&] { return ready_.count(want) || errors_.count(want); });
  if (auto e = errors_.find(want); e != errors_.end()) {
    auto err = e->second;
    errors_.erase(e);
    ++next_to_yield_;
    lock.unlock();
    cv_.notify_all();
    std::rethrow_exception(err);
  }
  Batch b = std::move(ready_[want]);
  ready_.erase(want);
  ++next_to_yield_;
  lock.unlock();
  cv_.notify_all();
  return b;
}

}  // namespace gdrt::data
