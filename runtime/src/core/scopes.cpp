// Thread-local modes: grad recording, scalar access on devices, f64 promotion;
// and the host threads kernels run on, which the backends own (their
// registrations' HostThreads).
#include <algorithm>
#include <thread>

#include "core/registration.h"
#include "gdrt/tensor.h"

namespace gdrt {
namespace {
thread_local bool t_grad_enabled = true;
thread_local int t_allow_scalar = 0;
thread_local int t_allow_f64 = 0;
}  // namespace

NoGrad::NoGrad() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGrad::~NoGrad() { t_grad_enabled = previous_; }
bool grad_enabled() { return t_grad_enabled; }

AllowScalar::AllowScalar() { ++t_allow_scalar; }
AllowScalar::~AllowScalar() { --t_allow_scalar; }
bool scalar_allowed() { return t_allow_scalar > 0; }

AllowFloat64Promotion::AllowFloat64Promotion() { ++t_allow_f64; }
AllowFloat64Promotion::~AllowFloat64Promotion() { --t_allow_f64; }
bool float64_promotion_allowed() { return t_allow_f64 > 0; }

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const HostThreads& threads : registered_host_threads()) threads.set(n);
}

int num_threads() {
  for (const HostThreads& threads : registered_host_threads())
    if (threads.get) return threads.get();
  return 1;  // no backend runs threads of its own: kernels run on the caller's
}

}  // namespace gdrt
