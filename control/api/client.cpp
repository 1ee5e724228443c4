#include "control/api/client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "control/api/protocol.hpp"

namespace mcgw::api {

using nlohmann::json;

namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

}  // namespace

Result<json, ClientError> call(const std::string& socket_path, const std::string& command,
                               const json& args, int timeout_ms) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path) {
    return unexpected(ClientError{true, "socket path too long: " + socket_path});
  }
  Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return unexpected(ClientError{true, "mcgwd is not reachable at " + socket_path + ": " +
                                            std::strerror(errno) + " (is mcgw.service running?)"});
  }
  std::string req = json{{"version", kVersion}, {"command", command}, {"args", args}}.dump() + "\n";
  if (::send(s.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return unexpected(
        ClientError{true, "mcgwd closed the connection: " + std::string(std::strerror(errno))});
  }
  std::string in;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      return unexpected(ClientError{
          true, "mcgwd did not answer within " + std::to_string(timeout_ms / 1000) + " s"});
    }
    pollfd p{s.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) {
      return unexpected(ClientError{true, std::string("poll: ") + std::strerror(errno)});
    }
    char buf[8192];
    ssize_t n = ::recv(s.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      break;
    }
    if (errno != EAGAIN && errno != EINTR) {
      return unexpected(ClientError{true, std::string("read: ") + std::strerror(errno)});
    }
  }
  if (in.empty()) {
    // Closed without a word: the daemon stopped (or crashed) under the request.
    return unexpected(ClientError{
        true, "mcgwd closed the connection without answering (did it stop? see its log)"});
  }
  json r = json::parse(in, nullptr, false);
  if (r.is_discarded() || !r.is_object()) {
    return unexpected(ClientError{false, "mcgwd sent a response that is not JSON"});
  }
  if (r.value("version", 0) != kVersion) {
    return unexpected(ClientError{false, "mcgwd speaks API version " +
                                             std::to_string(r.value("version", 0)) +
                                             ", mcgwctl speaks " + std::to_string(kVersion)});
  }
  return r;
}

}  // namespace mcgw::api
