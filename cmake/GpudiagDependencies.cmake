# Every third-party dependency is found here, once. The Debian packages that
# provide them are installed by scripts/install-deps.sh.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(simdjson REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate)  # gunzip of imported traces, chunk CRC-32

# CUDA: the toolkit at /usr/local/cuda (or CUDAToolkit_ROOT). No GPU is needed
# to build; tests that need one skip at run time.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
set(GPUDIAG_CUDA_FOUND OFF)
if(CUDAToolkit_FOUND AND TARGET CUDA::cupti AND TARGET CUDA::cudart)
  set(GPUDIAG_CUDA_FOUND ON)
endif()

# clang/LLVM 19 LibTooling for gpulint.
set(GPUDIAG_CLANG_FOUND OFF)
# No version in find_package: LLVM's config accepts only an exact major.minor
# ("19" does not match 19.1.x); the major version is checked instead.
find_package(Clang QUIET CONFIG PATHS /usr/lib/llvm-19/lib/cmake/clang NO_DEFAULT_PATH)
if(Clang_FOUND)
  find_package(LLVM QUIET CONFIG PATHS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
  if(LLVM_FOUND AND LLVM_VERSION_MAJOR EQUAL 19)
    set(GPUDIAG_CLANG_FOUND ON)
  endif()
endif()
