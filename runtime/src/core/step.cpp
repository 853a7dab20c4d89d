#include "gdrt/step.h"

#include <atomic>

#include "core/hooks.h"

namespace gdrt {
namespace {
std::atomic<std::int64_t> g_next_step{0};
}  // namespace

TrainingStep::TrainingStep()
    : number_(g_next_step.fetch_add(1, std::memory_order_relaxed)), start_ns_(hooks::recording() ? hooks::now_ns() : 0) {}

TrainingStep::~TrainingStep() {
  if (start_ns_ != 0) hooks::step(number_, start_ns_, hooks::now_ns());
}

}  // namespace gdrt
