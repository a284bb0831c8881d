// Which bundled GPU a device is, from the name CUDA and nvidia-smi report for it.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "pipescope/planner/gpu.h"

namespace pipescope::planner {
namespace {

// "NVIDIA A100-SXM4-80GB" -> {"A100", "SXM4", "80GB"}: upper case, split on spaces and dashes,
// without the vendor (older drivers leave it out).
std::vector<std::string> name_tokens(std::string_view device_name) {
  std::string text(device_name);
  for (char& c : text)
    c = c == '-' || c == '_' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::string> tokens;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (word != "NVIDIA") tokens.push_back(word);
  }
  return tokens;
}

bool has(const std::vector<std::string>& tokens, std::string_view token) {
  return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
}

bool has_prefix(const std::vector<std::string>& tokens, std::string_view prefix) {
  return std::any_of(tokens.begin(), tokens.end(),
                     [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
}

// The "80GB" token's number; 0 when the name states no memory size.
int memory_gb(const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens) {
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "GB") == 0 &&
        std::all_of(t.begin(), t.end() - 2,
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return std::stoi(t.substr(0, t.size() - 2));
  }
  return 0;
}

// One row per part sold under a bundled GPU's chip name. `gpu` empty: a variant whose datasheet
// differs from the bundled part's; `why` then says how (from NVIDIA's datasheets).
struct Variant {
  std::string gpu;
  std::string part;
  std::string why;
};

Variant classify(const std::vector<std::string>& t) {
  const int gb = memory_gb(t);
  if (has(t, "GB200"))
    return {"", "GB200",
            "the Grace Blackwell superchip's B200, at up to 1,200 W, with peaks above the HGX B200's"};
  if (has(t, "B200")) return {"b200-180gb", "B200 (HGX/DGX B200)", ""};
  if (has(t, "H200")) {
    if (has(t, "NVL"))
      return {"", "H200 NVL", "a PCIe card at up to 600 W whose datasheet peaks are below the H200 SXM's"};
    return {"h200-141gb", "H200 SXM", ""};
  }
  if (has(t, "H100")) {
    if (has(t, "PCIE"))
      return {"", "H100 PCIe", "756 TFLOP/s dense BF16, 2.0 TB/s HBM2e, 114 SMs, no NVSwitch"};
    if (has(t, "NVL")) return {"", "H100 NVL", "94 GB, 3.9 TB/s, NVLink bridges in pairs"};
    if (gb != 0 && gb != 80) return {"", "H100 " + std::to_string(gb) + "GB", "a different memory size"};
    if (gb == 80 || has(t, "HBM3") || has_prefix(t, "SXM")) return {"h100-80gb", "H100 SXM5", ""};
    return {"", "H100 of an unstated kind", "the name tells neither SXM5 nor PCIe nor NVL"};
  }
  if (has(t, "A100")) {
    if (gb == 40) return {"", "A100 40GB", "40 GB of HBM2 at 1.56 TB/s"};
    if (has(t, "PCIE")) return {"", "A100 80GB PCIe", "1.94 TB/s, NVLink bridges in pairs, no NVSwitch"};
    if (gb == 80 && has_prefix(t, "SXM")) return {"a100-80gb", "A100 SXM4 80GB", ""};
    return {"", "A100 of an unstated kind", "the name tells neither its memory nor SXM4 nor PCIe"};
  }
  return {"", "", ""};
}

}  // namespace

Expected<Gpu> identify_gpu(std::string_view device_name) {
  for (const std::string& name : known_gpu_names()) {
    auto gpu = find_gpu(name);
    if (gpu.ok() && gpu->device_name == device_name) return gpu;
  }
  const Variant v = classify(name_tokens(device_name));
  if (!v.gpu.empty()) return find_gpu(v.gpu);
  std::string names;
  for (const std::string& known : known_gpu_names()) names += (names.empty() ? "" : ", ") + known;
  if (!v.part.empty()) {
    // Part names are read letter by letter: "an H100", "an A100", "a GB200".
    const bool vowel_sound = std::string_view("AEFHILMNORSX").find(v.part.front()) != std::string_view::npos;
    return Error{"the device '" + std::string(device_name) + "' is " + (vowel_sound ? "an " : "a ") + v.part +
                 " (" + v.why + "), which no bundled GPU (" + names +
                 ") describes; pass --gpu NAME to express its measurements against that GPU's datasheet "
                 "(predicted times stay the measured ones; memory size and link figures are that GPU's), "
                 "or add a GPU file"};
  }
  return Error{"the device '" + std::string(device_name) + "' is none of the bundled GPUs (" + names +
               "); pass --gpu NAME for the closest, or add a GPU file"};
}

}  // namespace pipescope::planner
