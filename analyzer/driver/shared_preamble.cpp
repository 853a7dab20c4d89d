#include "shared_preamble.h"

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include <clang/Basic/DiagnosticFrontend.h>
#include <clang/Basic/DiagnosticIDs.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/VirtualFileSystem.h>

#include "header_cost.h"
#include "preamble_plan.h"
#include "preamble_scan.h"

namespace gpudiag::lint {
namespace fs = std::filesystem;

struct SharedPreambles::Preamble {
  std::vector<std::string> command;  // of its first file
  std::string directory;
  std::vector<std::string> headers;  // the system includes after the wrapper
  std::once_flag once;
  std::string pch;  // "" until built, and when building failed
};

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Options whose value is a path, joined ("-Idir", "--sysroot=dir") or the
// next argument; "-include-pch" before "-include", which prefixes it.
constexpr std::array kPathOptions = {"-include-pch", "-include", "-imacros", "-iquote", "-isystem", "-isysroot",
                                     "-idirafter", "-iprefix", "-iwithprefixbefore", "-iwithprefix", "-cxx-isystem",
                                     "-ivfsoverlay", "-I", "-F", "-B", "--include-directory", "--sysroot",
                                     "-resource-dir", "--cuda-path", "--gcc-toolchain", "--gcc-install-dir",
                                     "-fmodule-map-file"};

// Whether a relative path among the flags makes the working directory part
// of what the command means. The source, last, is left out.
bool depends_on_directory(const std::vector<std::string>& argv) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    for (std::string_view option : kPathOptions) {
      if (!starts_with(argv[i], option)) continue;
      std::string_view value = std::string_view(argv[i]).substr(option.size());
      if (value.empty() && i + 2 < argv.size()) value = argv[++i];
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      if (!value.empty() && value.front() != '/') return true;
      break;
    }
  }
  return false;
}

// A CUDA command whose only pre-included file is gpulint's own can share.
bool can_share(const std::vector<std::string>& argv, const std::string& own_include) {
  if (argv.size() < 2 || std::find(argv.begin(), argv.end(), "--cuda-host-only") == argv.end()) return false;
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "-include" && i + 2 < argv.size() && argv[i + 1] == own_include) {
      ++i;
      continue;
    }
    if (starts_with(arg, "-include") || starts_with(arg, "-imacros") || starts_with(arg, "-emit-") ||
        starts_with(arg, "-Xclang"))
      return false;
  }
  return true;
}

std::string key_of(const std::vector<std::string>& argv, const std::string& directory) {
  std::string key = depends_on_directory(argv) ? directory : std::string();
  for (size_t i = 0; i + 1 < argv.size(); ++i) (key += '\0') += argv[i];
  return key;
}

// Notes a file of the user's (not a system header) entering the preamble.
class UserFileWatch : public clang::PPCallbacks {
 public:
  UserFileWatch(const clang::SourceManager& sm, const std::string& own_include, bool& seen)
      : sm_(sm), own_include_(own_include), seen_(seen) {}
  void FileChanged(clang::SourceLocation where, FileChangeReason reason, clang::SrcMgr::CharacteristicKind kind,
                   clang::FileID) override {
    if (reason != EnterFile || kind != clang::SrcMgr::C_User) return;
    const clang::FileID id = sm_.getFileID(where);
    if (id == sm_.getMainFileID()) return;
    const clang::OptionalFileEntryRef entry = sm_.getFileEntryRefForID(id);
    if (entry && entry->getName() != own_include_) seen_ = true;  // no entry: <built-in>, <command line>
  }

 private:
  const clang::SourceManager& sm_;
  const std::string& own_include_;
  bool& seen_;
};

class BuildPreamble : public clang::GeneratePCHAction {
 public:
  BuildPreamble(std::string output, const std::string& own_include, bool& user_file_seen)
      : output_(std::move(output)), own_include_(own_include), user_file_seen_(user_file_seen) {}

 protected:
  bool BeginInvocation(clang::CompilerInstance& ci) override {
    ci.getFrontendOpts().OutputFile = output_;
    return clang::GeneratePCHAction::BeginInvocation(ci);
  }
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef file) override {
    ci.getPreprocessor().addPPCallbacks(
        std::make_unique<UserFileWatch>(ci.getSourceManager(), own_include_, user_file_seen_));
    return clang::GeneratePCHAction::CreateASTConsumer(ci, file);
  }

 private:
  std::string output_;
  const std::string& own_include_;
  bool& user_file_seen_;
};

// Counts what goes wrong while a preamble is built; prints nothing.
class QuietCount : public clang::DiagnosticConsumer {};

}  // namespace

SharedPreambles::SharedPreambles(const std::vector<std::vector<std::string>>& commands,
                                 const std::vector<std::string>& directories, std::string own_include)
    : own_include_(std::move(own_include)), preamble_of_(commands.size(), nullptr) {
  std::map<std::string, std::vector<size_t>> by_command;  // in item order
  for (size_t index = 0; index < commands.size(); ++index)
    if (can_share(commands[index], own_include_))
      by_command[key_of(commands[index], directories[index])].push_back(index);
  for (const auto& [key, members] : by_command) {
    // A file alone with its command would pay for a preamble and gain nothing.
    if (members.size() < 2) continue;
    const HeaderSearchList search = header_search_list(commands[members.front()], directories[members.front()]);
    std::vector<std::vector<std::string>> tops;
    for (size_t index : members) tops.push_back(top_system_includes(commands[index].back(), search));
    HeaderCosts costs(search, directories[members.front()]);
    PreamblePlan plan = plan_preambles(tops, [&](const std::vector<std::string>& headers) {
      return costs.bytes(headers) + headers.size();  // a header's count breaks ties
    });
    const size_t first = preambles_.size();
    for (auto& headers : plan.preambles) {
      preambles_.push_back(std::make_unique<Preamble>());
      preambles_.back()->headers = std::move(headers);
    }
    for (size_t member = 0; member < members.size(); ++member) {
      if (plan.preamble_of[member] < 0) continue;
      Preamble& preamble = *preambles_[first + static_cast<size_t>(plan.preamble_of[member])];
      if (preamble.command.empty()) {
        preamble.command = commands[members[member]];
        preamble.directory = directories[members[member]];
      }
      preamble_of_[members[member]] = &preamble;
    }
  }
}

SharedPreambles::~SharedPreambles() {
  if (folder_.empty()) return;
  std::error_code ec;
  fs::remove_all(folder_, ec);
}

std::string SharedPreambles::folder() {
  std::lock_guard lock(folder_mutex_);
  if (folder_.empty()) {
    std::error_code ec;
    std::string pattern = (fs::temp_directory_path(ec) / "gpulint-preamble-XXXXXX").string();
    if (!ec && mkdtemp(pattern.data())) folder_ = pattern;
  }
  return folder_;
}

std::string SharedPreambles::preamble_for(size_t index) {
  Preamble* preamble = index < preamble_of_.size() ? preamble_of_[index] : nullptr;
  if (!preamble) return {};
  std::call_once(preamble->once, [&] { build(*preamble); });
  return preamble->pch;
}

std::vector<std::string> SharedPreambles::headers_for(size_t index) const {
  const Preamble* preamble = index < preamble_of_.size() ? preamble_of_[index] : nullptr;
  return preamble ? preamble->headers : std::vector<std::string>{};
}

bool SharedPreambles::has_preamble(size_t index) const {
  return index < preamble_of_.size() && preamble_of_[index] != nullptr;
}

void SharedPreambles::build(Preamble& preamble) {
  const std::string dir = folder();
  if (dir.empty()) return;
  size_t number = 0;
  while (number < preambles_.size() && preambles_[number].get() != &preamble) ++number;
  const std::string stem = dir + "/preamble-" + std::to_string(number);
  const std::string source = stem + ".cu", pch = stem + ".pch";
  {
    // A header some configurations lack (an optional library's) is left
    // out here and reported by the file that includes it.
    std::ofstream out(source);
    for (const auto& header : preamble.headers)
      out << "#if __has_include(" << header << ")\n#include " << header << "\n#endif\n";
    if (!out) return;
  }
  std::vector<std::string> argv = preamble.command;
  argv.back() = source;
  bool user_file_seen = false;
  QuietCount diagnostics;
  auto files = files_in(preamble.directory);
  clang::tooling::ToolInvocation invocation(argv, std::make_unique<BuildPreamble>(pch, own_include_, user_file_seen),
                                            files.get(), std::make_shared<clang::PCHContainerOperations>());
  invocation.setDiagnosticConsumer(&diagnostics);
  const bool ok = invocation.run();
  std::error_code ec;
  if (!ok || diagnostics.getNumErrors() > 0 || user_file_seen || !fs::exists(pch, ec)) {
    fs::remove(pch, ec);
    return;
  }
  preamble.pch = pch;
}

std::vector<std::string> with_preamble(std::vector<std::string> argv, const std::string& pch) {
  if (argv.empty() || pch.empty()) return argv;
  argv.insert(argv.end() - 1, {"-include-pch", pch});
  return argv;
}

bool is_preamble_failure(unsigned id) {
  return (id >= clang::diag::DIAG_START_SERIALIZATION && id < clang::diag::DIAG_START_LEX) ||
         id == clang::diag::err_fe_unable_to_load_pch;
}

llvm::IntrusiveRefCntPtr<clang::FileManager> files_in(const std::string& directory) {
  auto filesystem = llvm::vfs::createPhysicalFileSystem();
  filesystem->setCurrentWorkingDirectory(directory);
  return llvm::IntrusiveRefCntPtr<clang::FileManager>(new clang::FileManager(
      clang::FileSystemOptions(), llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(filesystem.release())));
}

}  // namespace gpudiag::lint
