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
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120 PROPERTIES LABELS "${T_LABELS}")
endfunction()
