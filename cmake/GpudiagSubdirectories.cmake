# gpudiag_add_subdirectories(): adds every folder below the current one that
# has a CMakeLists.txt, so a new component, test suite or bench is one folder.
function(gpudiag_add_subdirectories)
  file(GLOB parts LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(dir IN LISTS parts)
    if(IS_DIRECTORY ${dir} AND EXISTS ${dir}/CMakeLists.txt)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()
