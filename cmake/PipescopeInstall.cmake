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

install(TARGETS pipescope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET pipescope_inject)
  install(TARGETS pipescope_inject LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
foreach(suite gpu_benchmark nccl_benchmark trace_overhead)
  if(TARGET ${suite})
    install(TARGETS ${suite} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/pipescope)
  endif()
endforeach()
if(TARGET gpu_benchmark)
  install(FILES benches/gpu/attention_sdpa.py DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/pipescope)
endif()

install(DIRECTORY models/bundled/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/models FILES_MATCHING PATTERN "*.json")
install(DIRECTORY planner/hardware/data/clusters/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/clusters
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY planner/hardware/data/gpus/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/gpus
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY calibrate/profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/pipescope/profiles
        FILES_MATCHING PATTERN "*.json")
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md"
        PATTERN "gpu-runs" EXCLUDE)

# The trace reader as a CMake package (find_package(pipescope) -> pipescope::trace) and a
# pkg-config module (pipescope-trace).
set_target_properties(pipescope_trace PROPERTIES EXPORT_NAME trace)
set_target_properties(pipescope_common PROPERTIES EXPORT_NAME common)
install(TARGETS pipescope_common pipescope_trace EXPORT pipescopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY common/include/ profiler/trace/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(pipescope_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/pipescope)
install(EXPORT pipescopeTargets NAMESPACE pipescope:: DESTINATION ${pipescope_cmake_dir})
configure_package_config_file(cmake/pipescopeConfig.cmake.in ${PROJECT_BINARY_DIR}/pipescopeConfig.cmake
                              INSTALL_DESTINATION ${pipescope_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pipescopeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pipescopeConfig.cmake ${PROJECT_BINARY_DIR}/pipescopeConfigVersion.cmake
        DESTINATION ${pipescope_cmake_dir})
# The .pc file finds its prefix from its own place, so that it moves with the install.
file(RELATIVE_PATH pipescope_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" pipescope_pc_to_prefix "${pipescope_pc_to_prefix}")
configure_file(cmake/pipescope-trace.pc.in ${PROJECT_BINARY_DIR}/pipescope-trace.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pipescope-trace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
