// Running a benchmark's child process and timing it, for every benchmark.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace gpudiag::bench {

// The calling thread's CPU time, in ns: what a part of the recorder costs
// the thread that calls it, whatever else the machine runs.
inline double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Run {
  double wall = 0;        // seconds
  double cpu = 0;         // user + system seconds of the child and its threads
  double peak_bytes = 0;  // the child's peak resident memory
  int status = 0;
};

// Runs argv (argv[0] looked up on PATH) with extra environment entries
// ("NAME=value"), its stdout to `out`.
inline Run timed_run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& out = "/dev/null") {
  std::fflush(stdout);  // or the child's freopen writes our buffer a second time
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    if (std::freopen(out.c_str(), "w", stdout) == nullptr) _exit(126);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Run r;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  r.peak_bytes = static_cast<double>(ru.ru_maxrss) * 1024.0;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace gpudiag::bench
