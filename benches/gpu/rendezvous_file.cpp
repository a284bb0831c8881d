#include "rendezvous_file.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace pipescope::benches {
namespace {

// "pipescope-nccl-id 1 world=<N>\n<hex>\n": a header that tells a finished file from a stray one.
constexpr const char* kMagic = "pipescope-nccl-id 1 world=";

std::string to_hex(const std::string& bytes) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, std::string& bytes) {
  if (hex.size() % 2 != 0) return false;
  bytes.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    if (std::sscanf(hex.c_str() + i, "%2x", &value) != 1) return false;
    bytes += static_cast<char>(value);
  }
  return true;
}

}  // namespace

Status publish_id_file(const std::string& path, const std::string& id, int world_size) {
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kMagic << world_size << '\n' << to_hex(id) << '\n';
    if (!out.flush()) return Error{"cannot write the rendezvous file '" + temp + "'"};
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return Error{"cannot rename '" + temp + "' to the rendezvous file '" + path + "'"};
  }
  return Status::Ok();
}

Expected<std::string> wait_for_id_file(const std::string& path, int world_size, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  const std::string want = kMagic + std::to_string(world_size);
  std::string seen = "no file";
  for (;;) {
    std::ifstream in(path);
    std::string header, hex, id;
    if (in && std::getline(in, header) && std::getline(in, hex)) {
      if (header == want && from_hex(hex, id) && !id.empty()) return id;
      seen = "a file with '" + header + "'";
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::ostringstream msg;
      msg << "no NCCL id from rank 0 in the rendezvous file '" << path << "' after " << timeout_s
          << " s (found " << seen << "); is rank 0 running with the same --rendezvous file and WORLD_SIZE?";
      return Error{msg.str()};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace pipescope::benches
