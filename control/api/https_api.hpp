// The operator API over HTTPS with mutual TLS, for an SDN controller on
// another host (docs/policy.md, "Controller API").  Off unless the config's
// api.https.listen is set.
//
//   POST /api/v1/<command>   body: the command's args, a JSON object (empty: {})
//   GET  /api/v1/<command>   read-only commands; args from the query string
//   response: the Unix socket's body (control/api/protocol.hpp),
//             {"version": 1, "ok": true, "result": ...} or
//             {"version": 1, "ok": false, "error": {"message": ...}}
//
// Status codes: 200 ok; 400 the command answered an error (or the args are
// not an object); 403 the client's certificate names no allowed client;
// 404 not a command served here (the body lists them); 405 a method other
// than POST (or GET for a read-only command); 413 a body over 64 KiB;
// 415 a body that is not JSON; 500 the handler threw; 503 the gateway is
// busy (Busy: a reload); 504 the gateway did not answer in time
// (LoopTimeout).
//
// TLS 1.2 or 1.3 (1.3 preferred), forward-secret AEAD suites only; the
// client must present a certificate that chains to api.https.ca, and one of
// its names (a DNS subject alternative name, or the common name when it has
// none) must be in allowed-clients ("*.example.net": any one label below
// example.net; certificate-side wildcards are not honoured).  A refused
// handshake is logged once per connection; a refused client once per
// connection with its certificate's subject and address; every request of a
// command that changes something is logged with the client's name, the
// command, its args and the outcome.
//
// Threads: httplib's accept thread plus kWorkers workers.  The Handler runs
// on a worker, so it must be thread-safe; it may block (viaLoop() waits up
// to its timeout for the event loop), which holds that worker.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/result.hpp"
#include "control/core/event_loop.hpp"

namespace mcgw::api {

// Thrown by a Handler when the gateway did not answer in time: HTTP 504
// with what() as the error message.
class LoopTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a Handler when the gateway cannot take the command now (a
// reload is under way): HTTP 503 with Retry-After: 1 and what() as the
// error message.
class Busy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HttpsApi {
 public:
  // One request: the command (one of servedCommands()), its args (an
  // object) and the client's name (the certificate name that matched
  // allowed-clients, escaped).  Returns the response body as the Unix
  // socket's handler does ({"ok": ..., "result"/"error": ...}; "version" is
  // added).  Called on an HTTP worker thread, concurrently with other
  // requests: it must be thread-safe.  It may block (up to its own
  // timeout); throwing LoopTimeout answers 504, Busy 503, anything else 500.
  using Handler = std::function<nlohmann::json(
      const std::string& command, const nlohmann::json& args, const std::string& client)>;

  // Checks the files and the settings (CA, certificate and private key are
  // readable regular files, the key is mode 0600 or 0400 and matches the
  // certificate, listen parses, allowed-clients is valid and not empty),
  // binds and serves.  An error names the file, or the address and errno's
  // text.  Each call makes an independent server: on a reload, stop the
  // old one first when the address stays (the port must be free).
  static Result<std::unique_ptr<HttpsApi>, std::string> start(const config::HttpsApiConfig& config,
                                                              Handler handler);

  // Stops accepting, lets the requests being answered finish (each bounded
  // by the timeouts and the handler's own), joins every thread.  Idempotent.
  void stop();
  ~HttpsApi();
  HttpsApi(const HttpsApi&) = delete;
  HttpsApi& operator=(const HttpsApi&) = delete;

  // The address it listens on ("127.0.0.1:8443", "[::1]:8443").
  const std::string& listening() const;

  // The commands served over HTTPS, and those of them that change nothing
  // (also served by GET; the others are logged as changes).
  static const std::vector<std::string>& servedCommands();
  static bool readOnly(const std::string& command);

  static constexpr size_t kMaxBody = 64 * 1024;
  static constexpr size_t kWorkers = 4;
  static constexpr size_t kMaxQueued = 64;  // accepted, waiting for a worker
  static constexpr int kTimeoutSeconds = 5;
  static constexpr size_t kKeepAliveRequests = 100;

  struct Impl;

 private:
  explicit HttpsApi(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A Handler that runs on_loop on loop's thread (EventLoop::post) and waits
// up to timeout for its answer.  When the loop has not started it by then,
// it is cancelled (it will not run) and the request answers 504 "did not
// run"; when it had started, 504 says it may still take effect.  An
// exception on_loop throws reaches the HTTPS boundary (500).  loop must
// outlive every HttpsApi using the handler (stop the HttpsApi first); state
// shared with the posted closure lives in a shared_ptr, so a closure that
// runs after its request gave up touches nothing dead.
HttpsApi::Handler viaLoop(
    core::EventLoop& loop,
    std::function<nlohmann::json(const std::string& command, const nlohmann::json& args,
                                 const std::string& client)>
        on_loop,
    std::chrono::milliseconds timeout);

}  // namespace mcgw::api
