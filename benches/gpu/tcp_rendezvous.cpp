#include "tcp_rendezvous.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace pipescope::benches {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

int millis_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

std::string port_text(int port) { return std::to_string(port); }

}  // namespace

Status serve_id(int port, const std::string& id, int clients, double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Socket listener(socket(AF_INET6, SOCK_STREAM, 0));
  if (listener.fd() < 0)
    return Error{std::string("socket() for the NCCL id exchange: ") + std::strerror(errno)};
  const int on = 1, off = 0;
  setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  setsockopt(listener.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));  // IPv4 clients too
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  if (bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.fd(), clients + 8) != 0) {
    return Error{"cannot listen on port " + port_text(port) +
                 " for the NCCL id exchange (MASTER_PORT + 1): " + std::strerror(errno)};
  }
  for (int served = 0; served < clients;) {
    pollfd p{listener.fd(), POLLIN, 0};
    const int ready = poll(&p, 1, millis_left(deadline));
    if (ready <= 0) {
      return Error{"only " + std::to_string(served) + " of " + std::to_string(clients) +
                   " ranks fetched the NCCL id on port " + port_text(port) + " within " +
                   std::to_string(timeout_s) + " s"};
    }
    Socket client(accept(listener.fd(), nullptr, nullptr));
    if (client.fd() < 0) continue;
    size_t sent = 0;
    while (sent < id.size()) {
      const ssize_t n = send(client.fd(), id.data() + sent, id.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    if (sent == id.size()) ++served;
  }
  return Status::Ok();
}

Expected<std::string> fetch_id(const std::string& host, int port, size_t id_bytes, double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string last_error = "no attempt";
  while (Clock::now() < deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), port_text(port).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        Socket s(socket(a->ai_family, a->ai_socktype, a->ai_protocol));
        if (s.fd() < 0) continue;
        if (connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
          last_error = std::strerror(errno);
          continue;
        }
        std::string id(id_bytes, '\0');
        size_t got = 0;
        while (got < id_bytes) {
          pollfd p{s.fd(), POLLIN, 0};
          if (poll(&p, 1, millis_left(deadline)) <= 0) break;
          const ssize_t n = recv(s.fd(), id.data() + got, id_bytes - got, 0);
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        if (got == id_bytes) {
          freeaddrinfo(found);
          return id;
        }
        last_error = "the connection closed after " + std::to_string(got) + " bytes";
      }
      freeaddrinfo(found);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Error{"no NCCL id from rank 0 at " + host + ":" + port_text(port) +
               " (MASTER_ADDR, MASTER_PORT + 1) within " + std::to_string(timeout_s) +
               " s (last: " + last_error + "); or pass --rendezvous FILE"};
}

}  // namespace pipescope::benches
