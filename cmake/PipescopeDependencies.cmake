# Every external dependency, found the CMake way and named for the component that needs it.
# scripts/bootstrap.sh installs them from Debian's packages; nothing is vendored or downloaded.

# profiler/trace: per-chunk compression.
find_package(zstd REQUIRED CONFIG)
# cli: argument parsing and JSON output; analysis and planner read and write JSON.
find_package(CLI11 2.1 REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
# calibrate: least-squares fits.
find_package(Eigen3 3.4 REQUIRED CONFIG)
# profiler/export: the SQLite export.
find_package(SQLite3 REQUIRED)
# profiler/analysis: gzip-compressed PyTorch profiler traces (zlib to sniff and to say what is
# wrong with a damaged file; libdeflate, linked statically, to inflate one in a single call), and
# simdjson to read them without building a tree.
find_package(ZLIB REQUIRED)
find_package(simdjson 3 REQUIRED CONFIG)
find_path(LIBDEFLATE_INCLUDE_DIR libdeflate.h REQUIRED)
find_library(LIBDEFLATE_LIBRARY NAMES libdeflate.a deflate REQUIRED)
add_library(libdeflate::libdeflate UNKNOWN IMPORTED)
set_target_properties(libdeflate::libdeflate PROPERTIES IMPORTED_LOCATION "${LIBDEFLATE_LIBRARY}"
                                                        INTERFACE_INCLUDE_DIRECTORIES "${LIBDEFLATE_INCLUDE_DIR}")
# ISA-L's inflater streams a gzip'ed trace as it is read, into a few MiB of pages used again and
# again (Debian ships it as a shared library only). Without it (the glibc 2.28 build, a machine
# without libisal-dev) libdeflate inflates each document whole before it is read: slower.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(ISAL QUIET IMPORTED_TARGET libisal)
endif()
if(NOT TARGET PkgConfig::ISAL)
  message(STATUS "pipescope: no ISA-L (libisal-dev): gzip'ed PyTorch profiler traces are inflated whole before they are read")
endif()
# profiler/inject (CUPTI, NVTX3, NCCL) and benches/gpu (cudart, cuBLASLt, NCCL). The library
# is opened with dlopen at run time; a machine without a GPU or driver still builds and tests.
# The planner-only build (PIPESCOPE_PROFILER=OFF) looks for neither.
# AUTO (the pip wheel's choice): the profiler where both are found, the planner-only build otherwise.
if(PIPESCOPE_PROFILER STREQUAL "AUTO")
  find_package(CUDAToolkit 13 QUIET)
  find_package(NCCL 2.18 QUIET)
  if(CUDAToolkit_FOUND AND NCCL_FOUND)
    set(PIPESCOPE_PROFILER ON)
  else()
    message(STATUS "pipescope: no CUDA 13 toolkit with NCCL here; building the planner-only pipescope")
    set(PIPESCOPE_PROFILER OFF)
  endif()
endif()
if(PIPESCOPE_PROFILER)
  find_package(CUDAToolkit 13 REQUIRED)
  find_package(NCCL 2.18 REQUIRED)
endif()

if(PIPESCOPE_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED CONFIG)
  include(GoogleTest)
endif()
if(PIPESCOPE_BUILD_BENCHES)
  find_package(benchmark 1.7 REQUIRED CONFIG)
endif()
