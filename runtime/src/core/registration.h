// How backends join the registry without the core naming them: each backend
// folder defines `<name>_backend_registration()`, and the build generates
// builtin_backends.cpp calling those of the folders it compiled. Being
// called from there also keeps a static library from dropping the folder.
#pragma once

#include <vector>

#include "gdrt/backend.h"

namespace gdrt {

struct BackendRegistration {
  DeviceKind kind;
  BackendFactory factory;
  DeviceCounter count = {};  // unset: one device, index 0
};

// Generated (runtime/CMakeLists.txt): the backends this build has.
std::vector<BackendRegistration> builtin_backends();

}  // namespace gdrt
