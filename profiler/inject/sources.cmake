# libpipescope.so's sources, one list for the main build and the portable preload library
# (profiler/portable): the logic (unit tests link it as a static library) and the exported
# entry points.
set(PIPESCOPE_INJECT_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/cupti_api.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/cupti_records.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/cupti_source.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/cupti_tuning.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/launcher_env.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/external_correlation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/loaded_library.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_comms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_real.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_recorder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_recorder_comms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_recorder_ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/ongoing_calls.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nvtx_recorder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/process_hooks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/session.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_clock.cpp)
set(PIPESCOPE_INJECT_ENTRY_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/cupti_injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_interpose.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nvtx_injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/preload.cpp)
