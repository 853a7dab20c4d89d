// Follows the trace files of a run while the command runs, in a thread of
// gpudiag's own: it reads the files the traced processes write and prints
// each new problem on gpudiag's stderr (live_findings.h). The command's
// descriptors and output are not touched.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "trace_run.h"

namespace gpudiag::cli {

class LiveWatch {
 public:
  using Print = std::function<void(const std::string& line)>;
  // Follows every file of `files` written since `since` (the root's and
  // each child's as it appears), polling every `interval`.
  LiveWatch(TraceFiles files, std::filesystem::file_time_type since, Print print,
            std::chrono::milliseconds interval = std::chrono::milliseconds(50));
  // stop() when not yet called.
  ~LiveWatch();
  LiveWatch(const LiveWatch&) = delete;
  LiveWatch& operator=(const LiveWatch&) = delete;
  // Reads what the files hold by now, to their last byte, says what it
  // shows, and stops following: called once the command has exited.
  void stop();

 private:
  void run();

  TraceFiles files_;
  std::filesystem::file_time_type since_;
  Print print_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpudiag::cli
