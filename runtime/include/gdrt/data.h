// Datasets and a DataLoader with batching, seeded shuffling, worker threads,
// bounded prefetch and a hook that moves each batch (e.g. to a device).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gdrt/tensor.h"

namespace gdrt::data {

struct Example {
  Tensor input, target;
};
struct Batch {
  Tensor input, target;  // examples stacked along a new leading dimension
  std::vector<std::int64_t> indices;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Must be safe to call from several worker threads at once.
  virtual Example get(std::int64_t index) const = 0;
};

struct LoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;
  std::uint64_t seed = 0;  // epoch e shuffles with seed + e
  int workers = 0;         // 0: batches are built on the calling thread
  int prefetch = 2;        // batches built ahead of the consumer
  bool drop_last = false;
  // Batches land in pinned host memory of `pin_for` (preferred_device() if
  // unset), so that .to(device, /*non_blocking=*/true) really overlaps the
  // copy with the step (as PyTorch's DataLoader(pin_memory=True)).
  bool pin_memory = false;
  std::optional<Device> pin_for;
  // Applied to every batch on the thread that built it (e.g. .to(device)).
  std::function<Batch(Batch)> transfer;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  std::int64_t batches_per_epoch() const;
  // Starts (or restarts) an epoch; next() then yields its batches in order.
  void start_epoch(std::int64_t epoch);
  std::optional<Batch> next();

 private:
  Batch build(std::int64_t batch) const;
  void stop_workers();
  void worker_loop();

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  std::vector<std::int64_t> order_;
  std::int64_t next_to_build_ = 0, next_to_yield_ = 0, total_ = 0;
  std::map<std::int64_t, Batch> ready_;
  std::map<std::int64_t, std::exception_ptr> errors_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Stacks same-shaped tensors along a new leading dimension.
Tensor stack(const std::vector<Tensor>& tensors);

}  // namespace gdrt::data
