// The JSON fuzz targets' seeds: each KIND=FILE argument becomes one seed, a digit's value (the
// parser of json_inputs_fuzz.cpp, the split of plan_json_fuzz.cpp) as its first byte, followed by
// the file's text. Usage: make_json_fuzz_seeds DIR KIND=FILE...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_json_fuzz_seeds DIR KIND=FILE...\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::remove_all(dir);  // only this run's seeds
  std::filesystem::create_directories(dir);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (eq != 1 || arg[0] < '0' || arg[0] > '9') {
      std::fprintf(stderr, "make_json_fuzz_seeds: '%s' is not KIND=FILE with KIND a digit\n", arg.c_str());
      return 2;
    }
    std::ifstream in(arg.substr(2), std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "make_json_fuzz_seeds: cannot read %s\n", arg.substr(2).c_str());
      return 2;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(dir / ("seed-" + std::to_string(i - 1)), std::ios::binary);
    out << static_cast<char>(arg[0] - '0') << text;
    if (!out) {
      std::fprintf(stderr, "make_json_fuzz_seeds: cannot write %s\n", dir.c_str());
      return 2;
    }
  }
  return 0;
}
