// What the CUDA files of a run share, parsed once: among the CUDA files of
// one compile command (the source left out), two or more, precompiled
// headers of clang's CUDA runtime wrapper, gpulint's own -include
// (compat/nvcc_host_view.h) and system headers that each file served
// includes at its top itself (preamble_scan.h, preamble_plan.h). Each file is
// then parsed with -include-pch: the headers are guarded, so the file's own
// #include of one is skipped. Only system headers go in (a user header has
// its findings and NOLINT comments read from the file itself), and a
// preamble clang cannot build or load leaves its files to parse every header
// themselves.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <clang/Basic/FileManager.h>
#include <llvm/ADT/IntrusiveRefCntPtr.h>

namespace gpudiag::lint {

class SharedPreambles {
 public:
  // `commands[i]` is item i's clang argv (source last), run in
  // `directories[i]`; `own_include` is the -include gpulint adds itself, the
  // only one a preamble may hold (a command with another gets none).
  SharedPreambles(const std::vector<std::vector<std::string>>& commands, const std::vector<std::string>& directories,
                  std::string own_include);
  ~SharedPreambles();  // removes the preambles
  SharedPreambles(const SharedPreambles&) = delete;
  SharedPreambles& operator=(const SharedPreambles&) = delete;

  // The precompiled preamble of item `index`, built by the first caller for
  // its command while the others wait, or "" when it has none.
  std::string preamble_for(size_t index);
  // Whether item `index` is planned a preamble, and the system includes it
  // holds after the wrapper.
  bool has_preamble(size_t index) const;
  std::vector<std::string> headers_for(size_t index) const;

 private:
  struct Preamble;
  void build(Preamble& preamble);
  std::string folder();

  std::string own_include_;
  std::vector<std::unique_ptr<Preamble>> preambles_;
  std::vector<Preamble*> preamble_of_;  // per item; null when it has none
  std::mutex folder_mutex_;
  std::string folder_;  // made on the first build
};

// clang argv `argv` (source last) with the precompiled preamble `pch` read first.
std::vector<std::string> with_preamble(std::vector<std::string> argv, const std::string& pch);

// True for a diagnostic that says a precompiled header could not be used
// (missing, stale, built with other options).
bool is_preamble_failure(unsigned diagnostic_id);

// The files of a command run in `directory`, from the real file system.
llvm::IntrusiveRefCntPtr<clang::FileManager> files_in(const std::string& directory);

}  // namespace gpudiag::lint
