#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "rendezvous_file.h"
#include "tcp_rendezvous.h"

namespace pipescope::benches {
namespace {

namespace fs = std::filesystem;

// An NCCL id is 128 opaque bytes, zeros and high bytes included.
std::string sample_id() {
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 37);
  return id;
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("pipescope-rendezvous-test." + std::to_string(getpid()) + "." + name);
}

TEST(RendezvousFile, AnotherRankReadsTheIdRankZeroPublished) {
  const fs::path path = temp_path("published");
  ASSERT_TRUE(publish_id_file(path.string(), sample_id(), 4).ok());
  const auto id = wait_for_id_file(path.string(), 4, 1.0);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, sample_id());
  fs::remove(path);
}

TEST(RendezvousFile, WaitsForRankZeroToPublish) {
  const fs::path path = temp_path("late");
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(publish_id_file(path.string(), sample_id(), 2).ok());
  });
  const auto id = wait_for_id_file(path.string(), 2, 10.0);
  rank0.join();
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, sample_id());
  fs::remove(path);
}

TEST(RendezvousFile, ALeftoverForAnotherWorldSizeTimesOutWithWhatItFound) {
  const fs::path path = temp_path("stale");
  ASSERT_TRUE(publish_id_file(path.string(), sample_id(), 8).ok());
  const auto id = wait_for_id_file(path.string(), 4, 0.2);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find(path.string()), std::string::npos);
  EXPECT_NE(id.error().message.find("world=8"), std::string::npos);
  fs::remove(path);
}

TEST(RendezvousFile, NoFileTimesOut) {
  const auto id = wait_for_id_file(temp_path("never").string(), 2, 0.1);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("no file"), std::string::npos);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(TcpRendezvous, EveryOtherRankFetchesTheId) {
  const int port = free_port();
  Status served = Status::Ok();
  std::thread rank0([&] { served = serve_id(port, sample_id(), 2, 10.0); });
  for (int rank = 1; rank <= 2; ++rank) {
    const auto id = fetch_id("localhost", port, 128, 10.0);
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, sample_id());
  }
  rank0.join();
  EXPECT_TRUE(served.ok());
}

TEST(TcpRendezvous, NoRankZeroTimesOutNamingWhereItLooked) {
  const auto id = fetch_id("127.0.0.1", free_port(), 128, 0.3);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("MASTER_ADDR"), std::string::npos);
}

TEST(TcpRendezvous, RankZeroGivesUpWhenRanksDoNotCome) {
  const Status served = serve_id(free_port(), sample_id(), 1, 0.2);
  ASSERT_FALSE(served.ok());
  EXPECT_NE(served.error().message.find("0 of 1"), std::string::npos);
}

}  // namespace
}  // namespace pipescope::benches
