// A small blocking thread pool for the CPU kernels. Unlike OpenMP's default
// spin-waiting, idle workers sleep, which matters on shared or oversubscribed
// machines (CI runners, laptops running other work).
#pragma once

#include <cstdint>
#include <functional>

namespace gdrt::cpu {

// Runs body(i) for i in [0, n), split across the pool when `parallel` is
// true and the pool is free; the calling thread takes part. Calls from
// several threads at once are safe (the later ones run serially).
void parallel_for(std::int64_t n, bool parallel, const std::function<void(std::int64_t begin, std::int64_t end)>& body);
void set_pool_threads(int n);
int pool_threads();

}  // namespace gdrt::cpu
