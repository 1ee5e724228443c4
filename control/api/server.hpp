// The API server: a non-blocking Unix socket on the daemon's event loop
// (control/core/event_loop.hpp).  Hand-written accept/read/write rather than
// Asio: the daemon's one loop already waits on signals and timers, and a
// dozen lines keep it single-threaded with no extra dependency.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/result.hpp"
#include "control/core/event_loop.hpp"

namespace mcgw::api {

class Server {
 public:
  // Called with a parsed request of our version; returns the response body
  // (the server adds "version").
  using Handler =
      std::function<nlohmann::json(const std::string& command, const nlohmann::json& args)>;

  // timeout: how long a client may take to send its request, and then to
  // read its answer (the time mcgwd spends answering does not count).
  // The answer to a request taken by answerLater's hook: the response body
  // (the server adds "version").  Called once, on the loop thread, while the
  // Server lives; a client that went away meanwhile is simply not answered.
  using Reply = std::function<void(nlohmann::json body)>;
  // Sees each well-formed request before the handler: returning true takes
  // it, to be answered through reply later (a reload run off the loop); the
  // client waits, its timeout stopped.
  using Later = std::function<bool(const std::string& command, const nlohmann::json& args,
                                   const Reply& reply)>;

  // Takes the client's connection away from the server (no answer is
  // written): the descriptor, now blocking with a 3 s send timeout, is the
  // caller's to write to and close; -1 when the client went away.
  using Take = std::function<int()>;
  // Sees each well-formed request first: returning true takes it, to be
  // answered through reply (now or later) or taken over through take (a
  // stream: `mcgwctl capture`).
  using Streamer = std::function<bool(const std::string& command, const nlohmann::json& args,
                                      const Reply& reply, const Take& take)>;

  explicit Server(Handler handler, std::chrono::milliseconds timeout = std::chrono::seconds(5))
      : handler_(std::move(handler)), timeout_(timeout) {}
  ~Server();

  // Binds path (replacing a stale socket file), mode 0660, owned by group
  // (empty: unchanged).  Creates the parent directory if missing.
  Result<bool, std::string> listen(const std::string& path, const std::string& group);

  // Serves on loop (after listen()): the listening socket, then one source
  // per connection, added and removed as clients come and go.  A source's
  // handler answers at most one request and the loop dispatches one source
  // per iteration, so the loop's timers and signals (the watchdog) run
  // between requests that take long; the other clients stay ready for the
  // next iterations.  loop must outlive the Server.
  void attach(core::EventLoop& loop);
  void answerLater(Later later) { later_ = std::move(later); }
  void answerStreaming(Streamer streamer) { streamer_ = std::move(streamer); }
  // Paused: no connection is accepted or served (the kernel queues them),
  // so that the handler's state may change on another thread; resuming
  // restarts every client's timeout (mcgwd's time, not the client's).
  void setPaused(bool paused);
  const std::string& path() const { return path_; }
  static constexpr size_t kMaxClients = 64;

 private:
  struct Client {
    std::string in;
    std::string out;
    size_t sent = 0;
    bool draining = false;  // answered; discarding what the client still sends
    // When it connected, or when its answer was ready: the timeout counts
    // from here.
    std::chrono::steady_clock::time_point since;
    core::Source source;
    uint64_t id = 0;       // tells a reply's client from a later one on the same fd
    bool waiting = false;  // its request was taken by later_
  };
  void accept();
  void onClient(int fd, uint32_t events);
  // Closes a client (its source first: epoll must not outlive the fd).
  void drop(int fd);
  // Drops clients past the timeout.
  void sweep();
  // True when a request was answered.
  bool read(int fd, Client& c);
  void respond(Client& c, const nlohmann::json& body);
  void write(int fd, Client& c);

  Reply replyTo(int fd, uint64_t id);
  Take takeFrom(int fd, uint64_t id);

  Handler handler_;
  Later later_;
  Streamer streamer_;
  std::chrono::milliseconds timeout_;
  uint64_t next_id_ = 1;
  bool paused_ = false;
  bool accept_paused_ = false;
  std::string path_;
  int listen_fd_ = -1;
  core::EventLoop* loop_ = nullptr;
  core::Source listening_;
  core::Source resume_accept_;  // accepting paused when out of descriptors
  core::Source sweeper_;        // runs while there are clients
  std::map<int, Client> clients_;
  uint64_t refused_ = 0;
  std::chrono::steady_clock::time_point last_refusal_log_{};
};

// A response body as the server writes it: with "version", one line.
std::string responseLine(nlohmann::json body);

// The response to a malformed or unsupported request.
nlohmann::json errorResponse(const std::string& message,
                             const std::vector<std::string>& details = {});

// The response line (ending in a newline) to one request line: the request is
// parsed and checked (JSON object, version, "command" a string, "args" an
// object when given), then handed to handler.  Never throws: a handler that
// throws is logged and answered with an error, and the response is written
// with api::dump(), which escapes text that is not UTF-8.
std::string answer(std::string_view line, const Server::Handler& handler);

}  // namespace mcgw::api
