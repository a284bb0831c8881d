// Finds a shared library that the process has already loaded, wherever and however it was
// loaded. Python opens extension modules with RTLD_LOCAL, so their dependencies (libnccl,
// libcupti) are invisible to dlsym(RTLD_NEXT) and RTLD_DEFAULT; walking the link map and
// re-opening the object with RTLD_NOLOAD reaches them.
#pragma once

#include <string>

namespace pipescope::inject {

// A handle (dlopen RTLD_NOLOAD) to the first loaded object whose file name starts with
// `soname_prefix` (e.g. "libnccl.so"), skipping this library; nullptr when none is loaded.
// The handle holds a reference; callers keep it for the life of the process.
void* find_loaded_library(const char* soname_prefix) noexcept;

// The path of the loaded object that contains `address` (dladdr), or "".
std::string path_of_object_containing(const void* address);

}  // namespace pipescope::inject
