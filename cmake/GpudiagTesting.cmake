# gpudiag_test(NAME name SOURCES a.cpp... LIBS lib... [LABELS l...])
# A GoogleTest executable whose tests ctest discovers one by one.
include(GoogleTest)
function(gpudiag_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
    GPUDIAG_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPUDIAG_BINARY_DIR="${PROJECT_BINARY_DIR}"
    GPUDIAG_SHARED_DATA_DIR="${GPUDIAG_SHARED_DATA_DIR}")
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  gpudiag_warnings(${T_NAME})
  # Listing a test loads its libraries first: cuDNN and cuBLAS are hundreds
  # of MB, which a machine with a cold page cache and busy cores reads in
  # more than the default 5 s, and a timed-out listing fails the whole run.
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120)
  # gtest_discover_tests passes a list-valued property on as separate values
  # (LABELS "runtime;emu_races" gave the tests "runtime" alone), so the
  # labels are set by a script ctest runs after the discovered tests are in
  # (their names are in <target>_TESTS).
  if(T_LABELS)
    set(labels_script "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_labels.cmake")
    file(WRITE "${labels_script}"
         "if(DEFINED ${T_NAME}_TESTS)\n  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES LABELS \"${T_LABELS}\")\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_script}")
  endif()
endfunction()
