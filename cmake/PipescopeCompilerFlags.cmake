# Warnings for our own targets, and the sanitizer / fuzzer instrumentation of a build.
add_library(pipescope_warnings INTERFACE)
target_compile_options(pipescope_warnings INTERFACE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                       $<$<BOOL:${PIPESCOPE_WERROR}>:-Werror>)

if(PIPESCOPE_SANITIZE)
  # -fno-sanitize-recover makes a UBSan finding fail the test that hit it.
  add_compile_options(-fsanitize=${PIPESCOPE_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${PIPESCOPE_SANITIZE})
endif()

# Whether libpipescope.so is built and preloaded into the tests' programs. AddressSanitizer's and
# UBSan's runtimes must come first in a process, before any preloaded library; ThreadSanitizer's
# lives in the instrumented executable, which hands it to an instrumented library loaded into it,
# so the preloaded programs run under it (scripts/test-tsan.sh).
if(NOT PIPESCOPE_SANITIZE OR PIPESCOPE_SANITIZE STREQUAL "thread")
  set(PIPESCOPE_PRELOAD_TESTS ON)
else()
  set(PIPESCOPE_PRELOAD_TESTS OFF)
endif()

if(PIPESCOPE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "PIPESCOPE_FUZZ needs clang (libFuzzer); configure with CXX=clang++-14")
endif()

# The sanitizer build is unoptimized so that its reports read well, which makes the planner's
# search loops and the brute-force oracles that check them 50-70x slower than optimized code
# (minutes of CI). -O1, what the AddressSanitizer documentation recommends, keeps them to
# seconds; elsewhere the build's own optimization applies.
function(pipescope_optimize_under_sanitizers)
  if(PIPESCOPE_SANITIZE)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE -O1)
    endforeach()
  endif()
endfunction()

# Precompiled headers: the standard library, nlohmann/json and (in the suites) GoogleTest, parsed
# once per target instead of once per file. Unoptimized clang spends about half of each compile
# parsing them, which a PCH saves; optimized g++ spends its time generating code and measured no
# gain, so the default follows the compiler. The g++ build, without them, still catches a missing
# #include. A target of one or two files would spend as long building its PCH as it saves.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(pipescope_pch_default ON)
else()
  set(pipescope_pch_default OFF)
endif()
option(PIPESCOPE_PRECOMPILED_HEADERS "Precompile common headers per target" ${pipescope_pch_default})

set(PIPESCOPE_PCH_HEADERS
    <algorithm> <array> <chrono> <cmath> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring> <filesystem>
    <fstream> <functional> <limits> <map> <memory> <optional> <set> <span> <sstream> <string>
    <string_view> <utility> <vector>)

# pipescope_precompile_headers(<directory>): every C++ library and executable defined in the
# directory and below it. nlohmann/json joins the targets that link it, GoogleTest the suites.
function(pipescope_precompile_headers directory)
  if(NOT PIPESCOPE_PRECOMPILED_HEADERS)
    return()
  endif()
  get_property(targets DIRECTORY ${directory} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cpp$")
    list(LENGTH sources count)
    if(count LESS 3)
      continue()
    endif()
    get_target_property(links ${target} LINK_LIBRARIES)
    set(headers ${PIPESCOPE_PCH_HEADERS})
    if(links MATCHES "nlohmann_json")
      list(APPEND headers <nlohmann/json.hpp>)
    endif()
    if(links MATCHES "GTest::gtest")
      list(APPEND headers <gtest/gtest.h>)
    endif()
    list(TRANSFORM headers REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")
    target_precompile_headers(${target} PRIVATE ${headers})
  endforeach()
  get_property(subdirectories DIRECTORY ${directory} PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    pipescope_precompile_headers(${subdirectory})
  endforeach()
endfunction()
