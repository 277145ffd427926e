# Install rules: the CMake package (tdistConfig.cmake, tdistConfigVersion.cmake, the imported targets
# tdist::tdist and tdist::device), the pkg-config file tdist.pc, the public headers, libtdist, the
# NVIDIA device bitcode, tdist-opt and the launcher. Included once, last, from the top-level
# CMakeLists.txt (every target exists by then). Two layouts:
#
#   cmake --install <build> [--prefix P]         the wheel (pip install ., scikit-build-core)
#     P/include/tdist/                              tdist/include/tdist/
#     P/lib/libtdist.so                             tdist/libtdist.so (python/CMakeLists.txt)
#     P/lib/libtdist_device.bc                      tdist/lib/libtdist_device.bc (python/CMakeLists.txt)
#     P/lib/cmake/tdist/                            tdist/lib/cmake/tdist/
#     P/lib/pkgconfig/tdist.pc                      tdist/lib/pkgconfig/tdist.pc
#     P/bin/tdist-opt, P/bin/tdist-run              tdist/bin/tdist-opt; tdist-run is a console script
#     P/share/tdist/run.py, tdist_mps.py            tdist/run.py (a module), tdist/_mps.py
#
# A consumer: find_package(tdist) with P (or the wheel's tdist/ folder) on CMAKE_PREFIX_PATH, then
# target_link_libraries(app PRIVATE tdist::tdist); or `pkg-config --cflags --libs tdist`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  set(TDIST_INSTALL_LIBDIR tdist)
  set(TDIST_INSTALL_INCLUDEDIR tdist/include)
  set(TDIST_INSTALL_BINDIR tdist/bin)
  set(TDIST_INSTALL_BITCODEDIR tdist/lib)
  set(TDIST_INSTALL_CMAKEDIR tdist/lib/cmake/tdist)
  set(TDIST_INSTALL_PKGCONFIGDIR tdist/lib/pkgconfig)
else()
  set(TDIST_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
  set(TDIST_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
  set(TDIST_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
  set(TDIST_INSTALL_BITCODEDIR ${CMAKE_INSTALL_LIBDIR})
  set(TDIST_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tdist)
  set(TDIST_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# ---- targets
# libtdist's build-tree usage requirements come from its object library (runtime/CMakeLists.txt);
# installed, it is one shared library and the headers.
get_target_property(_tdist_iface tdist INTERFACE_LINK_LIBRARIES)
if(_tdist_iface)
  list(TRANSFORM _tdist_iface REPLACE "^tdist_objs$" "$<BUILD_INTERFACE:tdist_objs>")
  set_target_properties(tdist PROPERTIES INTERFACE_LINK_LIBRARIES "${_tdist_iface}")
endif()
target_include_directories(tdist INTERFACE $<INSTALL_INTERFACE:${TDIST_INSTALL_INCLUDEDIR}>)

# tdist::device: the device ABI for CUDA C++ (#include <tdist/NVIDIA/device.cuh>); the host side of
# a kernel (registering the module, the device state) is libtdist's.
add_library(tdist_device_abi INTERFACE)
target_include_directories(tdist_device_abi INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${TDIST_INSTALL_INCLUDEDIR}>)
target_link_libraries(tdist_device_abi INTERFACE tdist)
set_target_properties(tdist_device_abi PROPERTIES EXPORT_NAME device)
# The same names inside this build (add_subdirectory users, examples).
add_library(tdist::tdist ALIAS tdist)
add_library(tdist::device ALIAS tdist_device_abi)

install(TARGETS tdist tdist_device_abi EXPORT tdistTargets
  LIBRARY DESTINATION ${TDIST_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${TDIST_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${TDIST_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tdist DESTINATION ${TDIST_INSTALL_INCLUDEDIR})
install(EXPORT tdistTargets NAMESPACE tdist:: DESTINATION ${TDIST_INSTALL_CMAKEDIR})

# ---- device bitcode (built when clang-19 and the CUDA toolkit are there)
set(TDIST_INSTALLED_BITCODE "")
if(TARGET tdist_device_bc)
  set(TDIST_INSTALLED_BITCODE ${TDIST_INSTALL_BITCODEDIR}/libtdist_device.bc)
  if(NOT SKBUILD)  # the wheel gets it from python/CMakeLists.txt
    install(FILES ${TDIST_DEVICE_BC_FILE} DESTINATION ${TDIST_INSTALL_BITCODEDIR})
    install(FILES ${PROJECT_BINARY_DIR}/device/NVIDIA/libtdist_device_nvshmem.bc
            DESTINATION ${TDIST_INSTALL_BITCODEDIR} OPTIONAL)
  endif()
endif()

# ---- tdist-opt (compiler/, when MLIR 22 is there): it loads Debian's libMLIR / libLLVM
if(TARGET tdist-opt)
  set_target_properties(tdist-opt PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS tdist-opt RUNTIME DESTINATION ${TDIST_INSTALL_BINDIR})
endif()

# ---- launcher and tools
if(SKBUILD)
  # tdist-run is the console script tdist.run; tdist-bench runs tools/tdist-bench from here (tdist._cli).
  install(FILES ${PROJECT_SOURCE_DIR}/tools/tdist_mps.py DESTINATION tdist RENAME _mps.py)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/tdist-run ${PROJECT_SOURCE_DIR}/tools/tdist-bench
          DESTINATION tdist/_tools)
else()
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/tdist-run DESTINATION ${TDIST_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/python/tdist/run.py ${PROJECT_SOURCE_DIR}/tools/tdist_mps.py
          DESTINATION ${CMAKE_INSTALL_DATADIR}/tdist)
endif()

# ---- tdistConfig.cmake, tdistConfigVersion.cmake
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tdistConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tdistConfig.cmake
  INSTALL_DESTINATION ${TDIST_INSTALL_CMAKEDIR}
  PATH_VARS TDIST_INSTALL_INCLUDEDIR TDIST_INSTALL_BITCODEDIR)
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tdistConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tdistConfig.cmake ${PROJECT_BINARY_DIR}/cmake/tdistConfigVersion.cmake
        DESTINATION ${TDIST_INSTALL_CMAKEDIR})

# ---- tdist.pc, relocatable: the prefix is found from the .pc file's own place
set(_tdist_up "")
string(REPLACE "/" ";" _tdist_parts "${TDIST_INSTALL_PKGCONFIGDIR}")
foreach(_p IN LISTS _tdist_parts)
  string(APPEND _tdist_up "/..")
endforeach()
set(TDIST_PC_PREFIX "\${pcfiledir}${_tdist_up}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/tdist.pc.in ${PROJECT_BINARY_DIR}/cmake/tdist.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tdist.pc DESTINATION ${TDIST_INSTALL_PKGCONFIGDIR})
