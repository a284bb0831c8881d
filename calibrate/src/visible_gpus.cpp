#include "pipescope/calibrate/visible_gpus.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pipescope::calibrate {
namespace {

std::string trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

// The UUID of every "GPU n: ..." line, in order ("" when a line shows none).
std::vector<std::string> gpu_uuids(std::string_view list) {
  std::vector<std::string> uuids;
  std::istringstream lines{std::string(list)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("GPU ", 0) != 0) continue;
    const size_t at = line.find("(UUID: ");
    const size_t end = at == std::string::npos ? at : line.find(')', at);
    uuids.push_back(end == std::string::npos ? "" : line.substr(at + 7, end - at - 7));
  }
  return uuids;
}

}  // namespace

int visible_gpu_count(const char* cuda_visible_devices, std::string_view nvidia_smi_list) {
  const std::vector<std::string> uuids = gpu_uuids(nvidia_smi_list);
  if (cuda_visible_devices == nullptr) return static_cast<int>(uuids.size());
  std::set<size_t> seen;
  std::istringstream entries{std::string(cuda_visible_devices)};
  for (std::string raw; std::getline(entries, raw, ',');) {
    const std::string entry = trimmed(raw);
    size_t device = uuids.size();
    if (!entry.empty() && std::all_of(entry.begin(), entry.end(),
                                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      if (entry.size() < 10) device = std::stoul(entry);
    } else if (entry.rfind("GPU-", 0) == 0) {
      size_t matches = 0;
      for (size_t i = 0; i < uuids.size(); ++i) {
        if (!uuids[i].empty() && uuids[i].rfind(entry, 0) == 0) {
          device = i;
          ++matches;
        }
      }
      if (matches != 1) device = uuids.size();  // no GPU, or a prefix of several
    }
    if (device >= uuids.size()) break;
    seen.insert(device);
  }
  return static_cast<int>(seen.size());
}

}  // namespace pipescope::calibrate
