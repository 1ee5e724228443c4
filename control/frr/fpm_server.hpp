// The FPM server: zebra (dplane_fpm_nl) connects to it over TCP and sends
// every route change of its FIB as netlink messages in FPM frames.  One
// connection at a time: another while zebra is connected is refused (closed
// at once, counted).  Frames are decoded strictly
// (fpm_codec.hpp); in a frame that does not decode whole, each message is
// decoded alone and only those that do not decode are dropped and counted;
// a stream that loses its framing is closed (zebra reconnects and sends
// everything again).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"
#include "control/core/event_loop.hpp"
#include "control/frr/fpm_codec.hpp"

namespace mcgw::frr {

class FpmServer {
 public:
  struct Handlers {
    std::function<void()> connected;                               // zebra connected
    std::function<void(const std::vector<FpmMessage>&)> messages;  // a batch, in order
    std::function<void(const std::string& why)> disconnected;
  };
  // How much one handler run reads before it lets the loop go on (the
  // socket stays readable: the next iteration reads on).
  static constexpr size_t kReadBudget = 1u << 20;

  explicit FpmServer(Handlers handlers) : handlers_(std::move(handlers)) {}
  ~FpmServer();
  FpmServer(const FpmServer&) = delete;
  FpmServer& operator=(const FpmServer&) = delete;

  // Binds and listens (SO_REUSEADDR).  Replaces an earlier listening socket.
  Result<bool, std::string> listen(const config::IpAddress& address, uint16_t port);
  // The listening socket and the connection on loop; loop outlives this.
  void attach(core::EventLoop& loop);
  // Paused: nothing is accepted or read (the kernel buffers it).
  void setPaused(bool paused);
  // Closes the connection and the listening socket.
  void close();

  struct Stats {
    bool listening = false;
    std::string address;  // "127.0.0.1:2620"
    bool connected = false;
    std::string peer;  // zebra's address:port
    std::chrono::system_clock::time_point connected_at{};
    uint64_t connections = 0;
    uint64_t connections_refused = 0;  // while zebra was connected
    uint64_t frames = 0;
    uint64_t bytes = 0;
    uint64_t messages = 0;
    uint64_t frames_refused = 0;    // did not decode whole: decoded message by message
    uint64_t messages_refused = 0;  // of those, the messages that did not decode: dropped
    std::string last_error;         // of the last refused frame or closed stream (escaped)
  };
  const Stats& stats() const { return stats_; }
  // The port it listens on (the one the kernel chose when asked for 0).
  uint16_t port() const;

 private:
  void onAccept();
  void onData();
  void drop(const std::string& why);
  void watch();

  Handlers handlers_;
  core::EventLoop* loop_ = nullptr;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  bool paused_ = false;
  FpmFramer framer_;
  Stats stats_;
  core::Source listen_source_;
  core::Source conn_source_;
};

}  // namespace mcgw::frr
