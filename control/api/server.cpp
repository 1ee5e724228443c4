#include "control/api/server.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "control/api/protocol.hpp"

namespace mcgw::api {

using nlohmann::json;

namespace {
constexpr auto kClientTimeout = std::chrono::seconds(5);
constexpr size_t kMaxClients = 64;
}  // namespace

json errorResponse(const std::string& message, const std::vector<std::string>& details) {
  json e{{"message", message}};
  if (!details.empty()) {
    e["details"] = details;
  }
  return json{{"ok", false}, {"error", e}};
}

Server::~Server() {
  for (auto& [fd, c] : clients_) {
    ::close(fd);
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
}

Result<bool, std::string> Server::listen(const std::string& path, const std::string& group) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    return unexpected("API socket path too long: " + path);
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return unexpected(std::string("API socket: ") + std::strerror(errno));
  }
  // A socket file left by a crashed daemon is replaced; a live daemon's is
  // not, and nothing that is not a socket is ever removed.
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (struct stat st; ::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      ::close(fd);
      return unexpected("API socket " + path + " exists and is not a socket; not replacing it");
    }
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live =
        probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) {
      ::close(probe);
    }
    if (live) {
      ::close(fd);
      return unexpected("API socket " + path + " is in use by another running mcgwd");
    }
    ::unlink(path.c_str());
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    return unexpected("API socket " + path + ": " + e);
  }
  ::chmod(path.c_str(), 0660);
  if (!group.empty()) {
    struct group* g = ::getgrnam(group.c_str());
    if (!g || ::chown(path.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return unexpected("API socket " + path + ": cannot give it to group '" + group + "'");
    }
  }
  listen_fd_ = fd;
  path_ = path;
  return true;
}

void Server::pollFds(std::vector<pollfd>& fds) const {
  if (listen_fd_ >= 0 && std::chrono::steady_clock::now() >= accept_paused_until_) {
    fds.push_back({listen_fd_, POLLIN, 0});
  }
  for (const auto& [fd, c] : clients_) {
    fds.push_back({fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
  }
}

void Server::handle(const std::vector<pollfd>& fds) {
  for (const auto& p : fds) {
    if (!p.revents) {
      continue;
    }
    if (p.fd == listen_fd_) {
      accept();
      continue;
    }
    auto it = clients_.find(p.fd);
    if (it == clients_.end()) {
      continue;
    }
    Client& c = it->second;
    if (p.revents & (POLLERR | POLLNVAL)) {
      ::close(p.fd);
      clients_.erase(it);
    } else if (!c.out.empty()) {
      if (p.revents & POLLOUT) {
        write(p.fd, c);
      } else if (p.revents & POLLHUP) {
        ::close(p.fd);  // gone before reading the answer
        clients_.erase(it);
      }
    } else if (p.revents & (POLLIN | POLLHUP)) {
      read(p.fd, c);
    }
  }
  // Clients that never finish their request do not hold a slot for ever.
  auto now = std::chrono::steady_clock::now();
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (now - it->second.since > kClientTimeout) {
      ::close(it->first);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment rather than spin.
        accept_paused_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
      return;
    }
    if (clients_.size() >= kMaxClients) {
      // Full: the client that has waited longest makes room, so that idle
      // connections cannot lock the operator out.
      auto oldest = std::min_element(
          clients_.begin(), clients_.end(),
          [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
      ::close(oldest->first);
      clients_.erase(oldest);
    }
    clients_[fd] = Client{{}, {}, 0, false, std::chrono::steady_clock::now()};
  }
}

void Server::read(int fd, Client& c) {
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (c.draining) {
    if (n <= 0) {
      ::close(fd);
      clients_.erase(fd);
    }
    return;
  }
  if (n > 0) {
    c.in.append(buf, static_cast<size_t>(n));
  }
  size_t nl = c.in.find('\n');
  if (nl == std::string::npos && c.in.size() > kMaxRequestBytes) {
    respond(c, errorResponse("request larger than " + std::to_string(kMaxRequestBytes) + " bytes"));
    // Closing with unread input would reset the connection before the client
    // reads the answer: answer, then discard the rest until the client closes.
    c.draining = true;
    c.in.clear();
    return;
  }
  if (nl == std::string::npos && n > 0) {
    return;  // more to come
  }
  if (nl == std::string::npos && c.in.empty()) {
    ::close(fd);
    clients_.erase(fd);
    return;
  }
  std::string line = c.in.substr(0, nl);
  c.in.clear();  // one request per connection
  json req = json::parse(line, nullptr, false);
  if (req.is_discarded() || !req.is_object()) {
    respond(c, errorResponse("request is not a JSON object"));
  } else if (!req.contains("version") || !req["version"].is_number_integer() ||
             req["version"].get<int>() != kVersion) {
    respond(c, errorResponse("unsupported API version; this mcgwd speaks version " +
                             std::to_string(kVersion)));
  } else if (!req.contains("command") || !req["command"].is_string()) {
    respond(c, errorResponse("request has no \"command\" string"));
  } else {
    json args = req.value("args", json::object());
    json body;
    try {
      body = handler_(req["command"].get<std::string>(), args);
    } catch (const std::exception& e) {
      body = errorResponse(std::string("internal error: ") + e.what());
    }
    respond(c, body);
  }
}

void Server::respond(Client& c, const json& body) {
  json r = body;
  r["version"] = kVersion;
  c.out = r.dump() + "\n";
  c.sent = 0;
}

void Server::write(int fd, Client& c) {
  ssize_t n = ::send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n > 0) {
    c.sent += static_cast<size_t>(n);
    if (c.sent < c.out.size()) {
      return;
    }
  }
  if (c.draining && n > 0) {
    ::shutdown(fd, SHUT_WR);
    c.out.clear();
    return;
  }
  ::close(fd);
  clients_.erase(fd);
}

}  // namespace mcgw::api
