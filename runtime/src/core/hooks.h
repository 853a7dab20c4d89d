// Tracing hooks: the only place libgdrt talks to the recording API
// (gpudiag/record.h). Every call is one relaxed load and a branch when no
// trace is being recorded, and compiles to nothing without the recorder.
#pragma once

#include <cstdint>
#include <string>

#include "gdrt/backend.h"

namespace gdrt::hooks {

void allocated(const Device& device, const void* ptr, std::size_t bytes);
void freed(const Device& device, const void* ptr, std::size_t bytes);
void copied(const Device& device, void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
            std::size_t bytes, std::uint64_t start_ns, std::uint64_t end_ns);
// The host read `bytes` of device memory directly (item()/at() in AllowScalar).
void host_read(const Device& device, const void* ptr, std::size_t bytes);
// A rule the runtime detected itself (GD001, GD002, GD005), before it throws.
void finding(const std::string& rule, const std::string& message);
// A kernel ran on `device` from start to end (`name` is a string literal).
void kernel(const Device& device, const char* name, std::uint64_t start_ns, std::uint64_t end_ns);
// Training step `number` ran from start to end (gdrt::TrainingStep).
void step(std::int64_t number, std::uint64_t start_ns, std::uint64_t end_ns);
// True while a trace is being recorded (one relaxed load).
bool recording();
std::uint64_t now_ns();

}  // namespace gdrt::hooks
