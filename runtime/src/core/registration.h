// How backends join the registry without the core naming them: each backend
// folder defines `<name>_backend_registration()`, and the build generates
// builtin_backends.cpp calling those of the folders it compiled. Being
// called from there also keeps a static library from dropping the folder.
#pragma once

#include <functional>
#include <vector>

#include "gdrt/backend.h"

namespace gdrt {

// The host threads a backend's kernels run on, which gdrt::set_num_threads
// sets (n >= 1) and gdrt::num_threads reports.
struct HostThreads {
  std::function<void(int n)> set;
  std::function<int()> get;
};

struct BackendRegistration {
  DeviceKind kind;
  BackendFactory factory;
  DeviceCounter count = {};  // unset: one device, index 0
  HostThreads threads = {};  // unset: the backend runs no host threads of its own
};

// Generated (runtime/CMakeLists.txt): the backends this build has.
std::vector<BackendRegistration> builtin_backends();

// The host-thread hooks of the registered backends that have them.
std::vector<HostThreads> registered_host_threads();

}  // namespace gdrt
