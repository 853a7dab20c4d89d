// A GPU's UUID as nvidia-smi writes it (and CUDA_VISIBLE_DEVICES takes it),
// from the 16 bytes cuDeviceGetUuid gives: the name a GPU keeps whatever its
// ordinal in each process.
#pragma once

#include <string>

namespace gpudiag::cupti {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (`prefix` "MIG-" for a MIG
// instance); "" for sixteen zero bytes, which no GPU has (a driver that did
// not say).
inline std::string gpu_uuid_text(const unsigned char (&bytes)[16], const char* prefix = "GPU-") {
  constexpr char kHex[] = "0123456789abcdef";
  std::string text = prefix;
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 0xf];
    any |= bytes[i] != 0;
  }
  return any ? text : std::string();
}

}  // namespace gpudiag::cupti
