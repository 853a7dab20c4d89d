// Safetensors files: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
// and the raw little-endian data. PyTorch users read and write the same files.
#pragma once

#include <map>
#include <string>

#include "gdrt/nn.h"
#include "gdrt/optim.h"
#include "gdrt/tensor.h"

namespace gdrt {

using TensorMap = std::map<std::string, Tensor>;

// Copies every tensor to the host and writes atomically (temporary file in
// the same folder, fsync, rename). `metadata` goes into "__metadata__".
void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Reads and validates the whole file, then creates the tensors on `device`.
// Throws gdrt::Error naming the file and the problem (truncated, corrupt
// header, bad offsets, unknown dtype) before anything is returned.
TensorMap load_safetensors(const std::string& path, Device device = cpu_device());
std::map<std::string, std::string> safetensors_metadata(const std::string& path);

// Model (plain state_dict keys) plus optional optimiser state ("optimizer." prefix).
void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer = nullptr);
// Loads onto the model's current device; validates everything before changing anything.
void load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer = nullptr);

}  // namespace gdrt
