# gpudiag_export(target...): install a library and add it to find_package(gpudiag).
function(gpudiag_export)
  install(TARGETS ${ARGN} EXPORT gpudiagTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set_property(GLOBAL APPEND PROPERTY GPUDIAG_EXPORTED_TARGETS ${ARGN})
endfunction()
