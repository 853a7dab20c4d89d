#include "header_search.h"

#include <filesystem>
#include <memory>

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/Utils.h>
#include <clang/Lex/HeaderSearchOptions.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/Support/VirtualFileSystem.h>

namespace gpudiag::lint {

HeaderSearchList header_search_list(const std::vector<std::string>& argv, const std::string& directory) {
  HeaderSearchList list;
  std::vector<const char*> args;
  for (const std::string& arg : argv) args.push_back(arg.c_str());
  clang::CreateInvocationOptions options;
  options.Diags = clang::CompilerInstance::createDiagnostics(new clang::DiagnosticOptions, new clang::IgnoringDiagConsumer);
  auto filesystem = llvm::vfs::createPhysicalFileSystem();
  filesystem->setCurrentWorkingDirectory(directory);
  options.VFS = llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(filesystem.release());
  const std::unique_ptr<clang::CompilerInvocation> invocation = clang::createInvocation(args, options);
  if (!invocation) return list;
  using Group = clang::frontend::IncludeDirGroup;
  const auto& entries = invocation->getHeaderSearchOpts().UserEntries;
  const auto add = [&](auto wanted) {
    for (const auto& entry : entries) {
      if (entry.IsFramework || !wanted(entry.Group)) continue;
      const std::filesystem::path path(entry.Path);
      list.dirs.push_back((path.is_absolute() ? path : std::filesystem::path(directory) / path).lexically_normal().string());
    }
  };
  add([](Group g) { return g == Group::Quoted; });
  list.quoted_only = list.dirs.size();
  add([](Group g) { return g == Group::Angled; });
  list.user_end = list.dirs.size();
  add([](Group g) { return g != Group::Quoted && g != Group::Angled && g != Group::After; });
  add([](Group g) { return g == Group::After; });
  list.preincluded = invocation->getPreprocessorOpts().Includes;
  return list;
}

}  // namespace gpudiag::lint
