#include "control/api/server.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "config/text.hpp"
#include "control/api/json_text.hpp"
#include "control/api/protocol.hpp"

namespace mcgw::api {

using nlohmann::json;

namespace {}  // namespace

json errorResponse(const std::string& message, const std::vector<std::string>& details) {
  json e{{"message", message}};
  if (!details.empty()) {
    e["details"] = details;
  }
  return json{{"ok", false}, {"error", e}};
}

namespace {

json responseTo(std::string_view line, const Server::Handler& handler) {
  json req;
  try {
    req = json::parse(line);
  } catch (const json::parse_error& e) {
    return errorResponse("request is not valid JSON: at byte " + std::to_string(e.byte) + ": " +
                         api::parseErrorReason(e.what()));
  }
  if (!req.is_object()) {
    return errorResponse(std::string("request is ") + api::typeName(req) +
                         ", not a JSON object {\"version\": ..., \"command\": ...}");
  }
  if (!req.contains("version") || !req["version"].is_number_integer() ||
      req["version"].get<int64_t>() != kVersion) {
    return errorResponse("unsupported API version; this mcgwd speaks version " +
                         std::to_string(kVersion));
  }
  if (!req.contains("command") || !req["command"].is_string()) {
    return errorResponse("request has no \"command\" string");
  }
  json args = json::object();
  if (req.contains("args") && !req["args"].is_null()) {
    if (!req["args"].is_object()) {
      return errorResponse(std::string("\"args\" must be an object, found ") +
                           api::typeName(req["args"]));
    }
    args = req["args"];
  }
  const std::string command = req["command"].get<std::string>();
  try {
    return handler(command, args);
  } catch (const std::exception& e) {
    spdlog::error("API: command {} failed: {}", text::quote(command), text::escape(e.what(), 512));
    return errorResponse("internal error: " + text::escape(e.what(), 512));
  } catch (...) {
    spdlog::error("API: command {} failed with an unknown exception", text::quote(command));
    return errorResponse("internal error");
  }
}

}  // namespace

std::string answer(std::string_view line, const Server::Handler& handler) {
  json r;
  try {
    r = responseTo(line, handler);
    if (!r.is_object()) {
      r = errorResponse("internal error: the response is not an object");
    }
    r["version"] = kVersion;
  } catch (const std::exception& e) {  // out of memory building the response
    spdlog::error("API: {}", text::escape(e.what(), 512));
    r = errorResponse("internal error");
    r["version"] = kVersion;
  }
  return dump(r) + "\n";
}

Server::~Server() {
  sweeper_.reset();
  resume_accept_.reset();
  while (!clients_.empty()) {
    drop(clients_.begin()->first);
  }
  listening_.reset();
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

void Server::attach(core::EventLoop& loop) {
  loop_ = &loop;
  listening_ = loop.onReadable(listen_fd_, "API socket " + path_, [this] { accept(); });
  // A client past its timeout is dropped within a quarter of the timeout.
  const auto every = std::clamp<std::chrono::microseconds>(
      std::chrono::duration_cast<std::chrono::microseconds>(timeout_) / 4,
      std::chrono::milliseconds(10), std::chrono::seconds(1));
  sweeper_ = loop.every(
      every, "API client timeouts", [this] { sweep(); }, core::Priority::kNormal);
  sweeper_.setEnabled(false);
}

void Server::onClient(int fd, uint32_t events) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) {
    return;
  }
  Client& c = it->second;
  if (events & EPOLLERR) {
    drop(fd);
    return;
  }
  if (!c.out.empty()) {
    if (events & EPOLLOUT) {
      write(fd, c);
    } else if (events & EPOLLHUP) {
      drop(fd);  // gone before reading the answer
      return;
    }
  } else if (events & (EPOLLIN | EPOLLHUP)) {
    read(fd, c);  // at most one request: the loop runs other sources next
  }
  // Still there: wait for what comes next, the request or the client
  // reading its answer.
  if (auto again = clients_.find(fd); again != clients_.end()) {
    again->second.source.setIoEvents(again->second.out.empty() ? EPOLLIN : EPOLLOUT);
  }
}

Server::Reply Server::replyTo(int fd, uint64_t id) {
  return [this, fd, id](json body) {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second.id != id || !it->second.waiting) {
      return;  // gone
    }
    Client& c = it->second;
    c.waiting = false;
    if (!body.is_object()) {
      body = errorResponse("internal error: the response is not an object");
    }
    respond(c, body);
    c.source.setIoEvents(EPOLLOUT);
    c.source.setEnabled(!paused_);
  };
}

void Server::setPaused(bool paused) {
  paused_ = paused;
  listening_.setEnabled(!paused && !accept_paused_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& [fd, c] : clients_) {
    c.source.setEnabled(!paused && !c.waiting);
    c.since = now;
  }
  sweeper_.setEnabled(!paused && !clients_.empty());
}

void Server::drop(int fd) {
  clients_.erase(fd);  // its source goes first
  ::close(fd);
  if (clients_.empty()) {
    sweeper_.setEnabled(false);
  }
}

void Server::sweep() {
  // Clients that never finish their request, or never read their answer, do
  // not hold a slot for ever.
  auto now = std::chrono::steady_clock::now();
  std::vector<int> late;
  for (const auto& [fd, c] : clients_) {
    if (!c.waiting && now - c.since > timeout_) {
      late.push_back(fd);
    }
  }
  for (int fd : late) {
    drop(fd);
  }
}

void Server::accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment rather than spin.
        accept_paused_ = true;
        listening_.setEnabled(false);
        resume_accept_ = loop_->after(std::chrono::seconds(1), "API accept resumes", [this] {
          accept_paused_ = false;
          listening_.setEnabled(!paused_);
        });
      }
      return;
    }
    if (clients_.size() >= kMaxClients) {
      // Full: the client that has waited longest makes room, so that idle
      // connections cannot lock the operator out.  It is told why before it
      // is closed (best effort: the socket buffer takes a short line).
      auto oldest = std::min_element(
          clients_.begin(), clients_.end(),
          [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
      json r = errorResponse("too many API connections (at most " + std::to_string(kMaxClients) +
                             "); this one waited longest and was closed; try again");
      r["version"] = kVersion;
      std::string line = dump(r) + "\n";
      ::send(oldest->first, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(oldest->first, SHUT_RDWR);
      drop(oldest->first);
      ++refused_;
      auto now = std::chrono::steady_clock::now();
      if (now - last_refusal_log_ > std::chrono::seconds(10)) {  // not a log line per connection
        spdlog::warn("API: more than {} connections open; closed the oldest ({} so far)",
                     kMaxClients, refused_);
        last_refusal_log_ = now;
      }
    }
    Client& c = clients_[fd];
    c.since = std::chrono::steady_clock::now();
    c.id = next_id_++;
    c.source = loop_->onIo(fd, EPOLLIN, "API client " + std::to_string(fd),
                           [this, fd](uint32_t events) { onClient(fd, events); });
    sweeper_.setEnabled(!paused_);
  }
}

bool Server::read(int fd, Client& c) {
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return false;
  }
  if (c.draining) {
    if (n <= 0) {
      drop(fd);
    }
    return false;
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
    return false;
  }
  if (nl == std::string::npos && n > 0) {
    return false;  // more to come
  }
  if (nl == std::string::npos && c.in.empty()) {
    drop(fd);
    return false;
  }
  std::string line = c.in.substr(0, nl);
  c.in.clear();  // one request per connection
  bool taken = false;
  const uint64_t id = c.id;
  const Reply reply = later_ || streamer_ ? replyTo(fd, id) : Reply();
  const Take take = streamer_ ? takeFrom(fd, id) : Take();
  std::string out = answer(line, [&](const std::string& command, const json& args) {
    c.waiting = true;  // what replyTo and takeFrom answer (possibly at once)
    if ((streamer_ && streamer_(command, args, reply, take)) ||
        (later_ && later_(command, args, reply))) {
      taken = true;
      return json::object();
    }
    c.waiting = false;
    return handler_(command, args);
  });
  auto it = clients_.find(fd);
  if (it == clients_.end() || it->second.id != id) {
    return true;  // taken over (a stream)
  }
  Client& k = it->second;
  if (taken) {
    if (k.waiting) {
      k.source.setEnabled(false);  // until the reply
    }
    return true;  // else answered already (reply called at once)
  }
  k.out = std::move(out);
  k.sent = 0;
  k.since = std::chrono::steady_clock::now();  // the time to read the answer starts now
  return true;
}

Server::Take Server::takeFrom(int fd, uint64_t id) {
  return [this, fd, id]() -> int {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second.id != id || !it->second.waiting) {
      return -1;
    }
    clients_.erase(it);  // its source goes; the descriptor stays open
    if (clients_.empty()) {
      sweeper_.setEnabled(false);
    }
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval tv{3, 0};  // a reader that stops reading for 3 s ends the stream
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
  };
}

std::string responseLine(json body) {
  body["version"] = kVersion;
  return dump(body) + "\n";
}

void Server::respond(Client& c, const json& body) {
  json r = body;
  r["version"] = kVersion;
  c.out = dump(r) + "\n";
  c.sent = 0;
  c.since = std::chrono::steady_clock::now();
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
  drop(fd);
}

}  // namespace mcgw::api
