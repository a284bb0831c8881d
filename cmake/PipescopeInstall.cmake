# `cmake --install`: a relocatable GNU layout. Every command finds what it needs relative to its
# own binary, so a prefix moved elsewhere still works:
#   bin/pipescope                         the command
#   <libdir>/libpipescope.so              the preload library (`pipescope record` finds it)
#   libexec/pipescope/                    the GPU suite (`pipescope calibrate run` finds it)
#   share/pipescope/{models,clusters,profiles,gpus}/  bundled data (compiled in too; files added
#                                         here are found by name, data_dirs.h)
#   share/doc/pipescope/                  README and docs
#   include/, <libdir>/libpipescope_trace.a, <libdir>/cmake/pipescope/, <libdir>/pkgconfig/
#                                         the trace reader, for tools that read .pst files
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Components: runtime (the command, the preload library, data, docs), gpu_suite (the calibration
# suite, which needs cuBLASLt, NCCL and Google Benchmark at run time) and dev (the trace reader).
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME runtime)
# The command and the preload library built for older glibc (scripts/build-portable-cli.sh,
# scripts/build-portable-preload.sh) replace this build's in the install tree and the packages
# when named; scripts/package.sh names both.
set(PIPESCOPE_PORTABLE_CLI "" CACHE FILEPATH "A prebuilt pipescope command (glibc 2.28) to install instead of this build's")
if(PIPESCOPE_PORTABLE_CLI)
  if(NOT EXISTS "${PIPESCOPE_PORTABLE_CLI}")
    message(FATAL_ERROR "PIPESCOPE_PORTABLE_CLI: no file ${PIPESCOPE_PORTABLE_CLI}")
  endif()
  install(PROGRAMS "${PIPESCOPE_PORTABLE_CLI}" DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME pipescope)
else()
  install(TARGETS pipescope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
set(PIPESCOPE_PORTABLE_PRELOAD "" CACHE FILEPATH "A prebuilt libpipescope.so (glibc 2.28) to install instead of this build's")
if(PIPESCOPE_PORTABLE_PRELOAD)
  if(NOT EXISTS "${PIPESCOPE_PORTABLE_PRELOAD}")
    message(FATAL_ERROR "PIPESCOPE_PORTABLE_PRELOAD: no file ${PIPESCOPE_PORTABLE_PRELOAD}")
  endif()
  install(PROGRAMS "${PIPESCOPE_PORTABLE_PRELOAD}" DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libpipescope.so)
elseif(TARGET pipescope_inject)
  install(TARGETS pipescope_inject LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
foreach(suite gpu_benchmark nccl_benchmark trace_overhead)
  if(TARGET ${suite})
    install(TARGETS ${suite} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/pipescope COMPONENT gpu_suite)
  endif()
endforeach()
if(TARGET gpu_benchmark)
  install(FILES benches/gpu/attention_sdpa.py benches/gpu/eager_elementwise.py
          DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/pipescope COMPONENT gpu_suite)
endif()

install(DIRECTORY models/bundled/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/models FILES_MATCHING PATTERN "*.json")
install(DIRECTORY planner/hardware/data/clusters/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/clusters
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY planner/hardware/data/gpus/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/gpus
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY calibrate/profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/profiles
        FILES_MATCHING PATTERN "*.json")
install(FILES README.md CHANGELOG.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md"
        PATTERN "gpu-runs" EXCLUDE)

# The trace reader as a CMake package (find_package(pipescope) -> pipescope::trace) and a
# pkg-config module (pipescope-trace).
set_target_properties(pipescope_trace PROPERTIES EXPORT_NAME trace)
set_target_properties(pipescope_common PROPERTIES EXPORT_NAME common)
install(TARGETS pipescope_common pipescope_trace EXPORT pipescopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY common/include/ profiler/trace/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
set(pipescope_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/pipescope)
install(EXPORT pipescopeTargets NAMESPACE pipescope:: DESTINATION ${pipescope_cmake_dir} COMPONENT dev)
configure_package_config_file(cmake/pipescopeConfig.cmake.in ${PROJECT_BINARY_DIR}/pipescopeConfig.cmake
                              INSTALL_DESTINATION ${pipescope_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pipescopeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pipescopeConfig.cmake ${PROJECT_BINARY_DIR}/pipescopeConfigVersion.cmake
        DESTINATION ${pipescope_cmake_dir} COMPONENT dev)
# The .pc file finds its prefix from its own place, so that it moves with the install.
file(RELATIVE_PATH pipescope_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" pipescope_pc_to_prefix "${pipescope_pc_to_prefix}")
configure_file(cmake/pipescope-trace.pc.in ${PROJECT_BINARY_DIR}/pipescope-trace.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pipescope-trace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# Release packages (scripts/package.sh): one .tar.gz of the whole install tree, and a .deb per
# component. The runtime's dependencies are read from its binaries (dpkg-shlibdeps: glibc,
# libstdc++, zlib, SQLite, simdjson, ISA-L; the preload library needs glibc alone); the GPU suite's are stated,
# since cuBLASLt and NCCL come from NVIDIA's CUDA repository, not from Debian.
set(CPACK_PACKAGE_NAME pipescope)
set(CPACK_PACKAGE_VENDOR pipescope)
set(CPACK_PACKAGE_CONTACT "pipescope developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME pipescope)
if(PIPESCOPE_PORTABLE_CLI AND PIPESCOPE_PORTABLE_PRELOAD)
  # Both were checked to import nothing newer than GLIBC_2.28 (scripts/check-glibc-symbols.sh).
  # dpkg-shlibdeps would say 2.34: Debian 12's symbols file dates sysconf from there, for binaries
  # compiled against its headers.
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6 (>= 2.28)")
else()
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_GPU_SUITE_PACKAGE_NAME pipescope-gpu-suite)
set(CPACK_DEBIAN_GPU_SUITE_PACKAGE_DEPENDS
    "pipescope (= ${PROJECT_VERSION}), libbenchmark1debian, libstdc++6, libnccl2, libcublas-13-0")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME pipescope-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libzstd-dev")
set(CPACK_COMPONENTS_ALL runtime gpu_suite dev)
include(CPack)
