#include "core/registration.h"
namespace gdrt {
BackendRegistration emu_backend_registration() { return {DeviceKind::emu, nullptr}; }
}
