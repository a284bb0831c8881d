#include "loaded_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace pipescope::inject {
namespace {

struct Search {
  const char* prefix;
  const char* self_path;
  const char* found_path;
};

int visit(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* search = static_cast<Search*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') return 0;
  if (search->self_path != nullptr && std::strcmp(path, search->self_path) == 0) return 0;
  const char* slash = std::strrchr(path, '/');
  const char* file = slash != nullptr ? slash + 1 : path;
  if (std::strncmp(file, search->prefix, std::strlen(search->prefix)) != 0) return 0;
  search->found_path = path;
  return 1;
}

}  // namespace

void* find_loaded_library(const char* soname_prefix) noexcept {
  Dl_info self{};
  dladdr(reinterpret_cast<const void*>(&find_loaded_library), &self);
  Search search{soname_prefix, self.dli_fname, nullptr};
  dl_iterate_phdr(visit, &search);
  if (search.found_path == nullptr) return nullptr;
  // RTLD_NOLOAD never loads anything: it only takes a reference to the object already there.
  return dlopen(search.found_path, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
}

std::string path_of_object_containing(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

}  // namespace pipescope::inject
