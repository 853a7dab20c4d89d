// The UNet training step both step benches time (unet_step: gdrt cpu vs
// PyTorch; device_step: emu vs cpu, cuda vs PyTorch), and their shared
// command line, so the two always measure the same shapes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <ctime>

namespace bench {

struct StepConfig {
  int threads = 2, steps = 9;
  std::int64_t base = 16, depth = 4, batch = 4, size = 128;
  bool torch = true;
};

// --threads --steps --base --depth --batch --size --no-torch; exits 2 with
// a message naming `program` on anything else.
inline StepConfig parse_step_config(int argc, char** argv, const char* program) {
  StepConfig c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", program, a.c_str());
        std::exit(2);
      }
      return std::strtol(argv[++i], nullptr, 10);
    };
    if (a == "--threads") c.threads = static_cast<int>(next());
    else if (a == "--steps") c.steps = static_cast<int>(next());
    else if (a == "--base") c.base = next();
    else if (a == "--depth") c.depth = next();
    else if (a == "--batch") c.batch = next();
    else if (a == "--size") c.size = next();
    else if (a == "--no-torch") c.torch = false;
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", program, a.c_str());
      std::exit(2);
    }
  }
  if (c.steps < 1 || c.threads < 1) {
    std::fprintf(stderr, "%s: --steps and --threads must be >= 1\n", program);
    std::exit(2);
  }
  return c;
}

// CPU time of the whole process (every thread), for the cpu-time ratios.
inline double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline void print_step_config(const StepConfig& c) {
  std::printf("UNet(base %lld, depth %lld), batch %lld, 3x%lldx%lld, BCE-with-logits, Adam, %d threads, median of %d steps\n",
              static_cast<long long>(c.base), static_cast<long long>(c.depth), static_cast<long long>(c.batch),
              static_cast<long long>(c.size), static_cast<long long>(c.size), c.threads, c.steps);
}

}  // namespace bench
