# find_package(gpudiag) gives a user the runtime (gpudiag::gdrt) and the
# recording API (gpudiag::record); components add themselves to the export
# set `gpudiagTargets` with install(TARGETS ... EXPORT gpudiagTargets).
include(CMakePackageConfigHelpers)
get_property(_gpudiag_exported GLOBAL PROPERTY GPUDIAG_EXPORTED_TARGETS)
if(_gpudiag_exported)
  install(EXPORT gpudiagTargets NAMESPACE gpudiag:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpudiag)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/gpudiagConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gpudiagConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpudiag)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gpudiagConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gpudiagConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/gpudiagConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpudiag)
