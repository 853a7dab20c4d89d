// Safetensors reading and writing with full validation before use.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/impl.h"
#include "gdrt/checkpoint.h"

namespace gdrt {
namespace {

constexpr std::uint64_t kMaxHeader = 100u << 20;  // the format's own limit

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " \"" + path + "\": " + std::strerror(errno);
}

void write_all(int fd, const void* data, std::size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(sys_error("cannot write", path));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;
};

struct Parsed {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::vector<char> bytes;  // whole file
  std::size_t data_start = 0;
};

Parsed parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(sys_error("cannot open safetensors file", path));
  Parsed p;
  p.bytes.assign(std::istreambuf_iterator<char>(in), {});
  const auto fail = [&](const std::string& why) -> Error { return Error("safetensors file \"" + path + "\": " + why); };
  if (p.bytes.size() < 8) throw fail("truncated: " + std::to_string(p.bytes.size()) + " bytes, shorter than the 8-byte header length");
  std::uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(p.bytes[static_cast<std::size_t>(i)]);
  if (hlen > kMaxHeader) throw fail("header length " + std::to_string(hlen) + " is implausible (corrupt file?)");
  if (8 + hlen > p.bytes.size())
    throw fail("truncated: the header claims " + std::to_string(hlen) + " bytes but only " +
               std::to_string(p.bytes.size() - 8) + " follow");
  p.data_start = 8 + static_cast<std::size_t>(hlen);
  const std::uint64_t data_size = p.bytes.size() - p.data_start;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(p.bytes.begin() + 8, p.bytes.begin() + static_cast<std::ptrdiff_t>(p.data_start));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("corrupt JSON header: ") + e.what());
  }
  if (!header.is_object()) throw fail("the header is not a JSON object");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto& [key, v] : header.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ must be an object of strings");
      for (auto& [mk, mv] : v.items()) {
        if (!mv.is_string()) throw fail("__metadata__ value for \"" + mk + "\" is not a string");
        p.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const auto bad = [&](const std::string& why) { return fail("tensor \"" + key + "\": " + why); };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw bad("entry needs dtype, shape and data_offsets");
    if (!v["dtype"].is_string()) throw bad("dtype is not a string");
    Entry e{key, DType::f32, {}, 0, 0};
    try {
      e.dtype = dtype_from_safetensors(v["dtype"].get<std::string>());
    } catch (const Error& err) {
      throw bad(err.what());
    }
    if (!v["shape"].is_array()) throw bad("shape is not an array");
    for (auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw bad("shape holds a non-integer or negative dimension");
      e.shape.push_back(d.get<std::int64_t>());
    }
    auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("data_offsets must be [begin, end]");
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.begin > e.end || e.end > data_size)
      throw bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] fall outside the " +
                std::to_string(data_size) + " data bytes (truncated file?)");
    const auto need = static_cast<std::uint64_t>(shape_numel(e.shape)) * itemsize(e.dtype);
    if (e.end - e.begin != need)
      throw bad("holds " + std::to_string(e.end - e.begin) + " bytes but " + std::string(safetensors_name(e.dtype)) +
                shape_str(e.shape) + " needs " + std::to_string(need));
    ranges.emplace_back(e.begin, e.end);
    p.entries.push_back(std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) throw fail("tensor data ranges overlap (corrupt header)");
  return p;
}

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") throw Error("save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
    if (!t.defined()) throw Error("save_safetensors: tensor \"" + name + "\" is undefined");
    Tensor h = t.detach().to(cpu_device()).contiguous();  // copy device data to the host first
    const auto bytes = static_cast<std::uint64_t>(h.numel()) * itemsize(h.dtype());
    header[name] = {{"dtype", safetensors_name(h.dtype())}, {"shape", h.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(h);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::random_device rd;
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp" + std::to_string(rd()))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(sys_error("cannot create temporary file for", path));
  try {
    unsigned char len[8];
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    write_all(fd, len, 8, path);
    write_all(fd, text.data(), text.size(), path);
    for (const Tensor& h : host)
      write_all(fd, h.data_ptr(), static_cast<std::size_t>(h.numel()) * itemsize(h.dtype()), path);
    if (::fsync(fd) != 0) throw Error(sys_error("fsync failed for", path));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = sys_error("cannot rename the temporary file onto", path);
    ::unlink(tmp.c_str());
    throw Error(err);
  }
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // makes the rename itself durable
    ::close(dfd);
  }
}

TensorMap load_safetensors(const std::string& path, Device device) {
  Parsed p = parse_file(path);
  TensorMap out;
  for (const Entry& e : p.entries) {
    Tensor h = empty(e.shape, TensorOptions{}.with_dtype(e.dtype));
    if (e.end > e.begin) std::memcpy(h.data_ptr(), p.bytes.data() + p.data_start + e.begin, e.end - e.begin);
    if (e.dtype == DType::boolean) {
      auto* b = static_cast<std::uint8_t*>(h.data_ptr());
      for (std::int64_t i = 0; i < h.numel(); ++i)
        if (b[i] > 1) throw Error("safetensors file \"" + path + "\": tensor \"" + e.name + "\" holds a BOOL byte other than 0 or 1");
    }
    out[e.name] = h;
  }
  if (!device.is_cpu())
    for (auto& [_, t] : out) t = t.to(device);
  return out;
}

std::map<std::string, std::string> safetensors_metadata(const std::string& path) { return parse_file(path).metadata; }

void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer) {
  TensorMap all = model.state_dict();
  std::map<std::string, std::string> meta{{"format", "pt"}, {"producer", "gdrt"}};
  if (optimizer)
    for (auto& [k, t] : optimizer->state_dict()) all["optimizer." + k] = t;
  save_safetensors(path, all, meta);
}

void load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer) {
  TensorMap all = load_safetensors(path);
  TensorMap model_state, optim_state;
  for (auto& [k, t] : all) {
    if (k.rfind("optimizer.", 0) == 0) optim_state[k.substr(10)] = t;
    else model_state[k] = t;
  }
  if (optimizer && optim_state.empty())
    throw Error("checkpoint \"" + path + "\" holds no optimizer state (keys \"optimizer.*\")");
  // Validate the optimizer state against a scratch copy first, so a failure
  // leaves both the model and the optimizer unchanged.
  if (optimizer) {
    std::map<std::string, Tensor> previous = optimizer->state_dict();
    optimizer->load_state_dict(optim_state);
    try {
      model.load_state_dict(model_state);
    } catch (...) {
      optimizer->load_state_dict(previous);
      throw;
    }
    return;
  }
  model.load_state_dict(model_state);
}

}  // namespace gdrt
