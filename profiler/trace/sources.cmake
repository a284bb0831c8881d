# The trace format's sources, one list for the main build and the portable preload library
# (profiler/portable).
set(PIPESCOPE_TRACE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/capture_kinds.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/chunk_codec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/crc32c.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/process_barrier.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/process_info.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/record_schema.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_file_sink.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_summary.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_writer.cpp)
