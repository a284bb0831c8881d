# Warnings for our own targets, and the sanitizer / fuzzer instrumentation of a build.
add_library(pipescope_warnings INTERFACE)
target_compile_options(pipescope_warnings INTERFACE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                       $<$<BOOL:${PIPESCOPE_WERROR}>:-Werror>)

if(PIPESCOPE_SANITIZE)
  # -fno-sanitize-recover makes a UBSan finding fail the test that hit it.
  add_compile_options(-fsanitize=${PIPESCOPE_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${PIPESCOPE_SANITIZE})
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
