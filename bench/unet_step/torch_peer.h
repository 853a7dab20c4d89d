// The PyTorch side of a UNet-step benchmark: unet_step.py in a child
// process, asked for one training step at a time over a pipe, so its steps
// interleave with gdrt's and both see the same machine load. Shared by
// bench/unet_step (PyTorch on the CPU) and bench/devices (on a GPU).
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "python_with_torch.h"

namespace gdrt_bench {

// One step's wall time and the CPU time all the process's threads spent in
// it, in seconds (negative: not measured). Wall time is the goal; CPU time
// is the steadier of the two when other work shares the cores (it does not
// count time spent descheduled).
struct Times {
  double wall = -1, cpu = -1;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

class TorchPeer {
 public:
  // Starts `script` (run by python_with_torch()) with `args`; false unless it says "ready".
  bool start(const std::string& script, const std::vector<std::string>& args) {
    int to[2], from[2];
    if (::pipe(to) != 0) return false;
    if (::pipe(from) != 0) {
      ::close(to[0]), ::close(to[1]);
      return false;
    }
    std::vector<std::string> all = {python_with_torch(), script};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;  // built before fork: the child only calls async-signal-safe functions
    for (const auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to[0], 0);
      ::dup2(from[1], 1);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) ::dup2(devnull, 2);
      for (int fd : {to[0], to[1], from[0], from[1]}) ::close(fd);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(to[0]);
    ::close(from[1]);
    if (pid_ < 0) {
      ::close(to[1]), ::close(from[0]);
      return false;
    }
    to_ = ::fdopen(to[1], "w");
    from_ = ::fdopen(from[0], "r");
    char line[64] = {0};
    return to_ && from_ && std::fgets(line, sizeof line, from_) && std::string(line) == "ready\n";
  }
  // One PyTorch step's times, negative if the child failed.
  Times step() {
    std::fputs("step\n", to_);
    std::fflush(to_);
    char line[64] = {0};
    Times t;
    if (!std::fgets(line, sizeof line, from_) || std::sscanf(line, "%lf %lf", &t.wall, &t.cpu) != 2) return {};
    return t;
  }
  ~TorchPeer() {
    if (to_) std::fclose(to_);  // end of input ends the child
    if (from_) std::fclose(from_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

}  // namespace gdrt_bench
