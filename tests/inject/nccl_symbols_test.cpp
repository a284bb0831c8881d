// libpipescope.so against the toolkit's real libnccl.so.2: every NCCL entry point the library
// defines is one NCCL exports (their signatures are held to <nccl.h> when nccl_interpose.cpp
// compiles), and the set is exactly the interposed API — no other nccl* symbol is shadowed.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace {

// The functions defined (not merely referenced) in `path`'s dynamic symbol table.
std::set<std::string> defined_dynamic_functions(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  if (file.size() < sizeof(Elf64_Ehdr)) {
    ADD_FAILURE() << path << " is not an ELF file";
    return names;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, file.data(), sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    ADD_FAILURE() << path << " is not a 64-bit ELF file";
    return names;
  }
  auto section = [&](size_t index) {
    Elf64_Shdr shdr;
    std::memcpy(&shdr, file.data() + header.e_shoff + index * header.e_shentsize, sizeof(shdr));
    return shdr;
  };
  for (size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr dynsym = section(i);
    if (dynsym.sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr strings = section(dynsym.sh_link);
    for (size_t offset = 0; offset + sizeof(Elf64_Sym) <= dynsym.sh_size; offset += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, file.data() + dynsym.sh_offset + offset, sizeof(symbol));
      if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
      names.insert(file.data() + strings.sh_offset + symbol.st_name);
    }
  }
  return names;
}

std::set<std::string> nccl_functions_of_pipescope() {
  std::set<std::string> nccl;
  for (const std::string& name : defined_dynamic_functions(PIPESCOPE_INJECT_LIBRARY)) {
    if (name.starts_with("nccl")) nccl.insert(name);
  }
  return nccl;
}

TEST(NcclSymbols, TheLibraryInterposesExactlyTheRecordedApi) {
  const std::set<std::string> expected = {"ncclCommInitRank",
                                          "ncclCommInitRankConfig",
                                          "ncclCommInitRankScalable",
                                          "ncclCommInitAll",
                                          "ncclCommSplit",
                                          "ncclCommShrink",
                                          "ncclCommFinalize",
                                          "ncclCommDestroy",
                                          "ncclCommAbort",
                                          "ncclCommRevoke",
                                          "ncclAllReduce",
                                          "ncclAllGather",
                                          "ncclReduceScatter",
                                          "ncclBroadcast",
                                          "ncclBcast",
                                          "ncclReduce",
                                          "ncclAlltoAll",
                                          "ncclGather",
                                          "ncclScatter",
                                          "ncclSend",
                                          "ncclRecv",
                                          "ncclGroupStart",
                                          "ncclGroupEnd",
                                          "ncclCommGetAsyncError"};
  EXPECT_EQ(nccl_functions_of_pipescope(), expected);
}

TEST(NcclSymbols, EveryInterposedFunctionExistsInTheToolkitsNccl) {
  void* nccl = dlopen(NCCL_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  const std::set<std::string> ours = nccl_functions_of_pipescope();
  ASSERT_FALSE(ours.empty());
  for (const std::string& name : ours) {
    EXPECT_NE(dlsym(nccl, name.c_str()), nullptr) << name << " is not in " << NCCL_LIBRARY;
    // The strong twin the interposer forwards to.
    EXPECT_NE(dlsym(nccl, ("p" + name).c_str()), nullptr) << "p" << name << " is not in " << NCCL_LIBRARY;
  }
  dlclose(nccl);
}

}  // namespace
