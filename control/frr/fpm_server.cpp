#include "control/frr/fpm_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "config/text.hpp"

namespace mcgw::frr {

namespace {

std::string endpoint(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    port = ntohs(in.sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
  inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
  port = ntohs(in6.sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

// The netlink messages of a frame that did not decode whole, decoded one by
// one (each as a frame of its own).  Stops where the messages' lengths stop
// making sense.
struct EachMessage {
  std::vector<FpmMessage> messages;
  uint64_t refused = 0;
};
EachMessage decodeEachMessage(const std::vector<uint8_t>& frame) {
  EachMessage out;
  size_t at = kFpmHeaderSize;
  while (at + 16 <= frame.size()) {
    uint32_t len = 0;
    std::memcpy(&len, frame.data() + at, 4);  // nlmsg_len, host order
    if (len < 16 || len > frame.size() - at) {
      ++out.refused;
      break;
    }
    const size_t total = kFpmHeaderSize + len;
    std::vector<uint8_t> one(total);
    one[0] = 1;
    one[1] = 1;
    one[2] = static_cast<uint8_t>(total >> 8);
    one[3] = static_cast<uint8_t>(total & 0xff);
    std::memcpy(one.data() + kFpmHeaderSize, frame.data() + at, len);
    if (auto d = decodeFpmFrame(one); d) {
      for (auto& m : *d) {
        out.messages.push_back(std::move(m));
      }
    } else {
      ++out.refused;
    }
    at += (len + 3u) & ~3u;  // NLMSG_ALIGN
  }
  return out;
}

}  // namespace

uint16_t FpmServer::port() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (listen_fd_ < 0 || getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return 0;
  }
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(ss).sin_port
                                       : reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
}

FpmServer::~FpmServer() {
  handlers_ = {};  // going away with its owner: nobody to tell
  close();
}

Result<bool, std::string> FpmServer::listen(const config::IpAddress& address, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (address.family == config::Family::V4) {
    auto& in = reinterpret_cast<sockaddr_in&>(ss);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    std::memcpy(&in.sin_addr, address.bytes.data(), 4);
    len = sizeof in;
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(ss);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    std::memcpy(&in6.sin6_addr, address.bytes.data(), 16);
    len = sizeof in6;
  }
  const std::string where = endpoint(ss);
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return unexpected("FPM socket: " + std::string(strerror(errno)));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 4) != 0) {
    std::string why = strerror(errno);
    ::close(fd);
    return unexpected("FPM listen on " + where + ": " + why);
  }
  close();
  listen_fd_ = fd;
  stats_.listening = true;
  stats_.address = where;
  watch();
  return true;
}

void FpmServer::attach(core::EventLoop& loop) {
  loop_ = &loop;
  watch();
}

void FpmServer::watch() {
  if (loop_ == nullptr) {
    return;
  }
  if (listen_fd_ >= 0 && !listen_source_) {
    listen_source_ = loop_->onReadable(listen_fd_, "fpm-listen", [this] { onAccept(); });
  }
  if (conn_fd_ >= 0 && !conn_source_) {
    conn_source_ = loop_->onReadable(conn_fd_, "fpm", [this] { onData(); });
  }
  listen_source_.setEnabled(!paused_);
  if (conn_source_) {
    conn_source_.setEnabled(!paused_);
  }
}

void FpmServer::setPaused(bool paused) {
  paused_ = paused;
  if (listen_source_) {
    listen_source_.setEnabled(!paused);
  }
  if (conn_source_) {
    conn_source_.setEnabled(!paused);
  }
}

void FpmServer::close() {
  if (conn_fd_ >= 0) {
    drop("closed by mcgwd");
  }
  listen_source_.reset();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  stats_.listening = false;
}

void FpmServer::onAccept() {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int fd =
      accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EAGAIN && errno != EINTR) {
      spdlog::warn("FPM accept: {}", strerror(errno));
    }
    return;
  }
  if (conn_fd_ >= 0) {
    // zebra is connected: another connection (a port scan, a second zebra)
    // must not take its place.  A zebra that restarted has closed its end
    // (the kernel does so when it dies), so it is not one of these.
    ++stats_.connections_refused;
    spdlog::warn("FPM: connection from {} refused: zebra is connected from {}", endpoint(ss),
                 stats_.peer);
    ::close(fd);
    return;
  }
  conn_fd_ = fd;
  framer_ = FpmFramer();
  ++stats_.connections;
  stats_.connected = true;
  stats_.peer = endpoint(ss);
  stats_.connected_at = std::chrono::system_clock::now();
  spdlog::info("FPM: zebra connected from {}", stats_.peer);
  watch();
  if (handlers_.connected) {
    handlers_.connected();
  }
}

void FpmServer::drop(const std::string& why) {
  conn_source_.reset();
  if (conn_fd_ >= 0) {
    ::close(conn_fd_);
    conn_fd_ = -1;
  }
  framer_ = FpmFramer();
  if (stats_.connected) {
    spdlog::warn("FPM: connection from {} closed: {}", stats_.peer, why);
    stats_.connected = false;
    if (handlers_.disconnected) {
      handlers_.disconnected(why);
    }
  }
}

void FpmServer::onData() {
  static thread_local std::vector<uint8_t> buf(65536);
  std::vector<FpmMessage> batch;
  size_t budget = kReadBudget;
  bool closed = false;
  std::string close_why;
  while (budget > 0) {
    ssize_t got = read(conn_fd_, buf.data(), buf.size());
    if (got == 0) {
      closed = true;
      close_why = "zebra closed it";
      break;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno != EAGAIN) {
        closed = true;
        close_why = strerror(errno);
      }
      break;
    }
    stats_.bytes += static_cast<uint64_t>(got);
    budget -= std::min(budget, static_cast<size_t>(got));
    framer_.feed({buf.data(), static_cast<size_t>(got)});
    while (auto frame = framer_.next()) {
      if (!*frame) {
        closed = true;
        close_why = "framing lost: " + text::escape(frame->error(), 256);
        stats_.last_error = close_why;
        break;
      }
      ++stats_.frames;
      auto decoded = decodeFpmFrame(**frame);
      if (!decoded) {
        // One bad message must not take the frame's others with it (a
        // withdrawal lost would leave a route behind): each alone.
        ++stats_.frames_refused;
        stats_.last_error = text::escape(decoded.error(), 256);
        auto each = decodeEachMessage(**frame);
        stats_.messages_refused += each.refused;
        spdlog::warn("FPM: frame {}: {} message(s) refused, {} kept: {}", stats_.frames,
                     each.refused, each.messages.size(), stats_.last_error);
        decoded = std::move(each.messages);
      }
      stats_.messages += decoded->size();
      for (auto& m : *decoded) {
        batch.push_back(std::move(m));
      }
    }
    if (closed) {
      break;
    }
  }
  if (!batch.empty() && handlers_.messages) {
    handlers_.messages(batch);
  }
  if (closed) {
    drop(close_why);
  }
}

}  // namespace mcgw::frr
