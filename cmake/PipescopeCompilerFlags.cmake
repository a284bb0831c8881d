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
