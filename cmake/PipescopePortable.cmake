# The preamble of the two glibc 2.28 projects (profiler/portable, cli/portable), included before
# their project(): the version of the top-level project(), one for every build (the wheel reads it
# the same way), as PIPESCOPE_SOURCE_VERSION; the repository as _repo, its cmake/ on the module
# path; and, once project() has run, pipescope_portable_defaults() for what both set alike.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../CMakeLists.txt" _project_line REGEX "^project\\(pipescope VERSION")
string(REGEX MATCH "VERSION ([0-9.]+)" _version "${_project_line}")
set(PIPESCOPE_SOURCE_VERSION "${CMAKE_MATCH_1}")
get_filename_component(_repo "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
list(APPEND CMAKE_MODULE_PATH "${_repo}/cmake")

# C++20 without extensions, Release unless a build type is given, and the directory where the
# third-party headers go: the compiler brings its own C headers for glibc 2.28, and a system
# include directory on the command line would put the build machine's glibc headers before them.
macro(pipescope_portable_defaults)
  set(CMAKE_CXX_STANDARD 20)
  set(CMAKE_CXX_STANDARD_REQUIRED ON)
  set(CMAKE_CXX_EXTENSIONS OFF)
  if(NOT CMAKE_BUILD_TYPE)
    set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
  endif()
  set(_headers "${CMAKE_BINARY_DIR}/third-party-include")
  file(MAKE_DIRECTORY "${_headers}")
endmacro()
