# Adds tests/reliability to a build whose tests/CMakeLists.txt does not list it yet (local runs
# and scripts/ci-extra.sh before the tier is wired in):
#   cmake -S . -B build -DCMAKE_PROJECT_tdist_INCLUDE=$PWD/tests/reliability/standalone.cmake
# Runs right after project(); does nothing when tests/CMakeLists.txt already lists the tier.
file(READ ${CMAKE_SOURCE_DIR}/tests/CMakeLists.txt _tdist_tests_cml)
if(NOT _tdist_tests_cml MATCHES "reliability" AND NOT (DEFINED TDIST_BUILD_TESTS AND NOT TDIST_BUILD_TESTS))
  enable_testing()
  set(TDIST_RUN ${CMAKE_BINARY_DIR}/tools/tdist-run)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR} ${CMAKE_BINARY_DIR}/tests/reliability)
endif()
