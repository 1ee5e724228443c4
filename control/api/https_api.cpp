#include "control/api/https_api.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "config/text.hpp"
#include "control/api/json_text.hpp"
#include "control/api/protocol.hpp"
#include "control/api/server.hpp"
#include "control/core/fd.hpp"
#include "control/core/x509_files.hpp"

namespace mcgw::api {

using core::namesOf;
using core::readPrivateKey;
using core::sslErrors;
using nlohmann::json;

namespace {

constexpr size_t kMaxPath = 256;  // a file path in an error
constexpr size_t kMaxLoggedArgs = 512;
constexpr const char* kPrefix = "/api/v1/";
// Forward-secret AEAD suites for TLS 1.2 (TLS 1.3's are all that).
constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";

std::string sysError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// what ("the CA file") can be opened and is a regular file: OpenSSL reads
// files by name, and a FIFO or a device in its place would hang it.
Result<bool, std::string> checkFile(const std::string& path, const std::string& what) {
  core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return unexpected(sysError("cannot open " + what + " " + text::quote(path, kMaxPath), errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return unexpected(sysError("cannot stat " + what + " " + text::quote(path, kMaxPath), errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected(what + " " + text::quote(path, kMaxPath) + " is not a regular file");
  }
  return true;
}

// An allowed-clients entry: a DNS name, or "*." and a name of two labels
// or more (any one label below it, as X509_check_host matches a wildcard).
std::string checkAllowed(const std::string& name) {
  const auto star = name.find('*');
  if (star == std::string::npos) {
    return "";
  }
  const std::string rest = name.substr(std::min(name.size(), size_t{2}));
  if (star != 0 || name.size() < 2 || name[1] != '.' || rest.find('*') != std::string::npos ||
      rest.find('.') == std::string::npos || rest.front() == '.') {
    return "api https allowed-clients: " + text::quote(name) +
           ": a wildcard must be the whole first label, followed by two labels or more, "
           "such as *.example.net";
  }
  return "";
}

std::string peerOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "an unknown address";
  }
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "an unknown address";
}

std::string endpoint(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? "[" + host + "]:" + std::to_string(port)
                                             : host + ":" + std::to_string(port);
}

// At most kLines log lines per kWindow; the others are counted and the
// next line that is written says how many were left out.  A stranger cannot
// fill the log with refused handshakes.
class LogBudget {
 public:
  static constexpr int kLines = 10;
  static constexpr std::chrono::seconds kWindow{10};
  // nullopt: do not log; else the number of lines left out before this one.
  std::optional<uint64_t> take() {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - window_ >= kWindow) {
      window_ = now;
      used_ = 0;
    }
    if (used_ >= kLines) {
      ++left_out_;
      return std::nullopt;
    }
    ++used_;
    return std::exchange(left_out_, 0);
  }
  static std::string note(uint64_t left_out) {
    return left_out == 0 ? "" : " (" + std::to_string(left_out) + " earlier ones not logged)";
  }

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point window_{};
  int used_ = 0;
  uint64_t left_out_ = 0;
};

// httplib's task queue with a bound: kWorkers threads; past kMaxQueued
// waiting connections the accept thread serves the next one itself, so no
// more are accepted meanwhile (the kernel's backlog holds them) and a flood
// cannot take every descriptor of the process.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t workers, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < workers; ++i) {
      threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "mcgw-https");
        work();
      });
    }
  }
  ~BoundedPool() override { shutdown(); }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    fn();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) {
        t.join();
      }
    }
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return shutdown_ || !jobs_.empty(); });
        if (jobs_.empty()) {
          return;  // shut down, and every accepted connection served
        }
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

const std::vector<std::string> kServed = {"status",       "show-policy",      "show-usage",
                                          "show-tunnels", "show-counters",    "show-routes",
                                          "policy-set",   "policy-rules-set", "policy-rules-clear"};
const std::vector<std::string> kChanging = {"policy-set", "policy-rules-set", "policy-rules-clear"};

}  // namespace

// What one TLS connection has shown so far (SSL ex_data, freed with the SSL).
struct ConnState {
  HttpsApi::Impl* impl = nullptr;
  int fd = -1;
  std::string peer;
  bool established = false;
  std::string verify_failure;  // the first certificate the chain check refused
  std::string ssl_error;       // OpenSSL's reason when the handshake failed
  std::string alert;           // the first fatal alert, sent or received
  // The client check, made at its first request.
  bool checked = false;
  std::optional<std::string> client;  // the matched name; nullopt: not allowed
};

struct HttpsApi::Impl {
  config::HttpsApiConfig config;
  Handler handler;
  std::string host;
  int port = 0;
  std::string listening;
  std::unique_ptr<httplib::SSLServer> server;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<bool> done{false};
  std::mutex stop_mutex;  // stop() is idempotent and may race the destructor
  std::mutex wait_mutex;
  std::condition_variable wait_cv;
  LogBudget handshake_log;
  LogBudget refusal_log;
  // The connections' sockets, from their handshake until their SSL is
  // freed (httplib closes the socket after that): stop() shuts their
  // reading side, since httplib 0.11 would otherwise let a connection idle
  // out its whole keep-alive time before its worker ends.
  std::mutex conns_mutex;
  std::set<int> conns;

  void addConn(int fd) {
    std::lock_guard lock(conns_mutex);
    conns.insert(fd);
  }
  void removeConn(int fd) {
    std::lock_guard lock(conns_mutex);
    conns.erase(fd);
  }
  void shutdownReads() {
    std::lock_guard lock(conns_mutex);
    for (int fd : conns) {
      ::shutdown(fd, SHUT_RD);
    }
  }

  void run();
  void stop();
  void handshakeFailed(const ConnState& st);
  // The client's name, or nullopt (and a warning once per connection).
  std::optional<std::string> client(const httplib::Request& req);
  void serve(const httplib::Request& req, httplib::Response& res, const std::string* body);
  void reply(httplib::Response& res, int status, json body);
};

namespace {

void freeConnState(void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
                   void* /*argp*/) {
  auto* st = static_cast<ConnState*>(ptr);
  if (st == nullptr) {
    return;
  }
  try {
    if (st->impl != nullptr) {
      st->impl->removeConn(st->fd);
      if (!st->established) {
        st->impl->handshakeFailed(*st);
      }
    }
  } catch (...) {  // a C callback: nothing may escape
  }
  delete st;
}

int connIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, freeConnState);
  return index;
}

ConnState* stateOf(const SSL* ssl) {
  return ssl != nullptr ? static_cast<ConnState*>(SSL_get_ex_data(ssl, connIndex())) : nullptr;
}

void onInfo(const SSL* cssl, int where, int ret) {
  try {
    SSL* ssl = const_cast<SSL*>(cssl);
    ConnState* st = stateOf(ssl);
    if ((where & SSL_CB_HANDSHAKE_START) != 0 && st == nullptr) {
      ERR_clear_error();  // what the queue says next is about this connection
      auto fresh = std::make_unique<ConnState>();
      fresh->impl = static_cast<HttpsApi::Impl*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
      fresh->fd = SSL_get_fd(ssl);
      fresh->peer = peerOf(fresh->fd);
      if (SSL_set_ex_data(ssl, connIndex(), fresh.get()) == 1) {
        st = fresh.release();
        if (st->impl != nullptr && st->fd >= 0) {
          st->impl->addConn(st->fd);
        }
      }
    }
    if (st == nullptr || st->established) {
      return;
    }
    if ((where & SSL_CB_HANDSHAKE_DONE) != 0) {
      st->established = true;
      return;
    }
    if ((where & SSL_CB_ALERT) != 0 && (ret >> 8) == SSL3_AL_FATAL && st->alert.empty()) {
      st->alert = std::string((where & SSL_CB_WRITE) != 0 ? "sent" : "received") + " the alert \"" +
                  SSL_alert_desc_string_long(ret) + "\"";
    }
    if ((where & SSL_CB_EXIT) != 0 && ret <= 0 && st->ssl_error.empty()) {
      if (const unsigned long e = ERR_peek_error(); e != 0) {
        const char* r = ERR_reason_error_string(e);
        st->ssl_error = r != nullptr ? r : "error " + std::to_string(ERR_GET_REASON(e));
      }
    }
  } catch (...) {
  }
}

int onVerify(int ok, X509_STORE_CTX* store) {
  if (ok == 1) {
    return ok;
  }
  try {
    auto* ssl =
        static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
    ConnState* st = stateOf(ssl);
    if (st != nullptr && st->verify_failure.empty()) {
      X509* cert = X509_STORE_CTX_get_current_cert(store);
      st->verify_failure =
          std::string("certificate refused: ") +
          X509_verify_cert_error_string(X509_STORE_CTX_get_error(store)) + " (depth " +
          std::to_string(X509_STORE_CTX_get_error_depth(store)) +
          (cert != nullptr ? ", subject " + core::subjectOf(cert, core::SubjectText::kQuoted)
                           : "") +
          ")";
    }
  } catch (...) {
  }
  return ok;
}

Result<bool, std::string> setupContext(SSL_CTX* ctx, const config::HttpsApiConfig& c,
                                       HttpsApi::Impl* impl) {
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  static const unsigned char kSessionContext[] = "mcgw-https-api";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return unexpected("cannot set the TLS 1.2 ciphers: " + sslErrors());
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, onVerify);
  SSL_CTX_set_app_data(ctx, impl);
  SSL_CTX_set_info_callback(ctx, onInfo);

  if (auto r = checkFile(c.ca, "the CA file"); !r) {
    return unexpected(r.error());
  }
  if (SSL_CTX_load_verify_locations(ctx, c.ca.c_str(), nullptr) != 1) {
    return unexpected("cannot load the CA file " + text::quote(c.ca, kMaxPath) + ": " +
                      sslErrors());
  }
  // The CA names in the certificate request: a client with several
  // certificates (curl, browsers) picks the one this CA issued.
  if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.ca.c_str()); names != nullptr) {
    SSL_CTX_set_client_CA_list(ctx, names);
  }
  ERR_clear_error();
  if (auto r = checkFile(c.certificate, "the certificate file"); !r) {
    return unexpected(r.error());
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, c.certificate.c_str()) != 1) {
    return unexpected("cannot load the certificate file " + text::quote(c.certificate, kMaxPath) +
                      ": " + sslErrors());
  }
  auto key = readPrivateKey(c.private_key);
  if (!key) {
    return unexpected(key.error());
  }
  if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), *key) != 1) {
    EVP_PKEY_free(*key);
    ERR_clear_error();
    return unexpected("the private key " + text::quote(c.private_key, kMaxPath) +
                      " does not match the certificate " + text::quote(c.certificate, kMaxPath));
  }
  const int used = SSL_CTX_use_PrivateKey(ctx, *key);
  EVP_PKEY_free(*key);
  if (used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return unexpected("cannot use the private key " + text::quote(c.private_key, kMaxPath) + ": " +
                      sslErrors());
  }
  return true;
}

// SO_REUSEADDR (a restart binds while old connections are in TIME_WAIT) but
// not httplib's default SO_REUSEPORT: a second server on the same port
// must fail, not share the connections.
void socketOptions(int fd) {
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int domain = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
}

// Binds a socket as httplib will, to say why it cannot (httplib only says
// that it could not); 0 when the address is free.
int probeBind(const config::IpAddress& a, uint16_t port) {
  const bool v6 = a.family == config::Family::V6;
  core::Fd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    return errno;
  }
  socketOptions(fd.get());
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, a.bytes.data(), 16);
    len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, a.bytes.data(), 4);
    len = sizeof(sockaddr_in);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0 ||
      ::listen(fd.get(), 1) != 0) {
    return errno;
  }
  return 0;
}

// "application/json; charset=utf-8" -> "application/json"
std::string mediaType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return t;
}

// What httplib's own refusals mean.
std::string statusText(int status) {
  switch (status) {
    case 400:
      return "malformed HTTP request";
    case 404:
      return "no such resource";
    case 413:
      return "the body is larger than " + std::to_string(HttpsApi::kMaxBody) + " bytes";
    case 414:
      return "the request's URI is too long";
    case 416:
      return "bad Range header";
    default:
      return "HTTP status " + std::to_string(status);
  }
}

}  // namespace

void HttpsApi::Impl::handshakeFailed(const ConnState& st) {
  std::string why = !st.verify_failure.empty() ? st.verify_failure
                    : !st.ssl_error.empty()    ? st.ssl_error
                    : !st.alert.empty()        ? st.alert
                                               : "";
  // TLS 1.3's "certificate required" is "unknown" to OpenSSL 3.0's names.
  if (!st.alert.empty() && why != st.alert && st.alert.find("\"unknown\"") == std::string::npos) {
    why += "; " + st.alert;
  }
  // A client that connects and goes away (a port probe, a health check)
  // says nothing about certificates: info, not a warning.
  const bool quiet = why.empty() || (st.verify_failure.empty() &&
                                     st.ssl_error.find("unexpected eof") != std::string::npos);
  const auto left_out = handshake_log.take();
  if (!left_out) {
    return;
  }
  if (quiet) {
    spdlog::info("HTTPS API: {} closed the connection during the TLS handshake{}", st.peer,
                 LogBudget::note(*left_out));
  } else {
    spdlog::warn("HTTPS API: TLS handshake with {} failed: {}{}", st.peer, why,
                 LogBudget::note(*left_out));
  }
}

std::optional<std::string> HttpsApi::Impl::client(const httplib::Request& req) {
  ConnState* st = stateOf(req.ssl);
  ConnState local;
  if (st == nullptr) {
    st = &local;
  }
  if (st->checked) {
    return st->client;
  }
  st->checked = true;
  X509* cert = req.ssl != nullptr ? SSL_get0_peer_certificate(req.ssl) : nullptr;
  const std::string peer = endpoint(req.remote_addr, req.remote_port);
  if (cert == nullptr) {  // SSL_VERIFY_FAIL_IF_NO_PEER_CERT makes this unreachable
    spdlog::warn("HTTPS API: refused {}: no client certificate", peer);
    return std::nullopt;
  }
  for (const auto& allowed : config.allowed_clients) {
    std::string name = allowed;
    unsigned flags = X509_CHECK_FLAG_NO_WILDCARDS;
    if (allowed.rfind("*.", 0) == 0) {
      // ".example.net": any name below it; one label only.
      name = allowed.substr(1);
      flags |= X509_CHECK_FLAG_SINGLE_LABEL_SUBDOMAINS;
    }
    char* matched = nullptr;
    if (X509_check_host(cert, name.data(), name.size(), flags, &matched) == 1) {
      st->client = text::escape(matched != nullptr ? std::string_view(matched) : allowed, 253);
      OPENSSL_free(matched);
      return st->client;
    }
  }
  ERR_clear_error();
  if (const auto left_out = refusal_log.take()) {
    spdlog::warn(
        "HTTPS API: refused the client from {}: its certificate (subject {}, names {}) names "
        "no client in api https allowed-clients (403){}",
        peer, core::subjectOf(cert, core::SubjectText::kQuoted), namesOf(cert),
        LogBudget::note(*left_out));
  }
  return std::nullopt;
}

void HttpsApi::Impl::reply(httplib::Response& res, int status, json body) {
  if (!body.is_object()) {
    body = errorResponse("internal error: the response is not an object");
    status = 500;
  }
  body["version"] = kVersion;
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void HttpsApi::Impl::serve(const httplib::Request& req, httplib::Response& res,
                           const std::string* body) {
  const std::string peer = endpoint(req.remote_addr, req.remote_port);
  const auto who = client(req);
  if (!who) {
    reply(res, 403,
          errorResponse("this client's certificate is not allowed (api https allowed-clients)"));
    return;
  }
  if (req.path.rfind(kPrefix, 0) != 0) {
    reply(res, 404,
          errorResponse(std::string("no such resource; this gateway serves ") + kPrefix +
                            "COMMAND (API version " + std::to_string(kVersion) + "), commands:",
                        HttpsApi::servedCommands()));
    return;
  }
  const std::string command = req.path.substr(std::strlen(kPrefix));
  const auto& served = HttpsApi::servedCommands();
  if (std::find(served.begin(), served.end(), command) == served.end()) {
    reply(
        res, 404,
        errorResponse("unknown command " + text::quote(command) + "; served over HTTPS:", served));
    return;
  }
  json args = json::object();
  if (body == nullptr) {  // GET
    if (!HttpsApi::readOnly(command)) {
      res.set_header("Allow", "POST");
      reply(res, 405, errorResponse(command + " changes the gateway: use POST"));
      return;
    }
    for (const auto& [key, value] : req.params) {
      if (args.contains(key)) {
        reply(res, 400, errorResponse("argument " + text::quote(key) + " given twice"));
        return;
      }
      args[key] = value;
    }
  } else {
    const std::string type = mediaType(req.get_header_value("Content-Type"));
    if (!type.empty() && type != "application/json") {
      reply(res, 415,
            errorResponse("the body must be JSON (Content-Type: application/json), not " +
                          text::quote(type)));
      return;
    }
    if (!body->empty()) {
      json parsed;
      try {
        parsed = json::parse(*body);
      } catch (const json::parse_error& e) {
        reply(res, 415,
              errorResponse("the body is not valid JSON: at byte " + std::to_string(e.byte) + ": " +
                            parseErrorReason(e.what())));
        return;
      }
      if (!parsed.is_object()) {
        reply(res, 400,
              errorResponse(std::string("the body must be a JSON object of arguments, found ") +
                            typeName(parsed)));
        return;
      }
      args = std::move(parsed);
    }
  }

  int status = 200;
  json answer;
  std::string outcome;
  try {
    answer = handler(command, args, *who);
    if (!answer.is_object()) {
      status = 500;
      answer = errorResponse("internal error: the response is not an object");
      outcome = "failed: the response is not an object";
    } else if (answer.value("ok", false) == true) {
      outcome = "ok";
    } else {
      status = 400;
      const json& e = answer.contains("error") ? answer["error"] : json();
      outcome = "refused: " +
                text::escape(e.is_object() && e.contains("message") && e["message"].is_string()
                                 ? e["message"].get<std::string>()
                                 : std::string("(no message)"),
                             kMaxLoggedArgs);
    }
  } catch (const LoopTimeout& e) {
    status = 504;
    answer = errorResponse(text::escape(e.what(), kMaxLoggedArgs));
    outcome = "timed out: " + text::escape(e.what(), kMaxLoggedArgs);
  } catch (const Busy& e) {
    status = 503;
    res.set_header("Retry-After", "1");
    answer = errorResponse(text::escape(e.what(), kMaxLoggedArgs));
    outcome = "busy: " + text::escape(e.what(), kMaxLoggedArgs);
  } catch (const std::exception& e) {
    status = 500;
    spdlog::error("HTTPS API: command {} from {} failed: {}", text::quote(command), peer,
                  text::escape(e.what(), kMaxLoggedArgs));
    answer = errorResponse("internal error: " + text::escape(e.what(), kMaxLoggedArgs));
    outcome = "failed: " + text::escape(e.what(), kMaxLoggedArgs);
  } catch (...) {
    status = 500;
    spdlog::error("HTTPS API: command {} from {} failed with an unknown exception",
                  text::quote(command), peer);
    answer = errorResponse("internal error");
    outcome = "failed: unknown exception";
  }
  if (!HttpsApi::readOnly(command)) {
    spdlog::info("HTTPS API: {} from {} ran {} {}: {}", text::quote(*who), peer,
                 text::quote(command), text::escape(dump(args), kMaxLoggedArgs), outcome);
  }
  reply(res, status, std::move(answer));
}

void HttpsApi::Impl::run() {
  pthread_setname_np(pthread_self(), "mcgw-https-acc");
  for (;;) {
    server->listen_after_bind();
    if (stopping) {
      break;
    }
    // httplib stops on an accept error other than EMFILE/EINTR/EAGAIN
    // (ENOBUFS, ENOMEM): listen again rather than leave the API dead.
    spdlog::error("HTTPS API on {} stopped accepting connections ({}); listening again in 1 s",
                  listening, std::strerror(errno));
    bool bound = false;
    while (!bound) {
      {
        std::unique_lock lock(wait_mutex);
        wait_cv.wait_for(lock, std::chrono::seconds(1), [this] { return stopping.load(); });
      }
      if (stopping) {
        done = true;
        return;
      }
      bound = server->bind_to_port(host, port);
      if (!bound) {
        spdlog::error("HTTPS API: cannot listen on {} again: {}; trying again in 1 s", listening,
                      std::strerror(errno));
      }
    }
  }
  done = true;
}

void HttpsApi::Impl::stop() {
  std::lock_guard guard(stop_mutex);
  if (!thread.joinable()) {
    return;
  }
  stopping = true;
  {
    std::lock_guard lock(wait_mutex);
    wait_cv.notify_all();
  }
  // httplib's stop() acts only while listen runs: wait for either.
  while (!done) {
    if (server->is_running()) {
      server->stop();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // No more connections are accepted; the workers end with their
  // connections: a request being answered is answered, an idle connection
  // (or one still sending its request) ends now.
  while (!done) {
    shutdownReads();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  thread.join();
  spdlog::info("HTTPS API: stopped listening on {}", listening);
}

HttpsApi::HttpsApi(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpsApi::~HttpsApi() {
  stop();
}

void HttpsApi::stop() {
  if (impl_) {
    impl_->stop();
  }
}

const std::string& HttpsApi::listening() const {
  return impl_->listening;
}

const std::vector<std::string>& HttpsApi::servedCommands() {
  return kServed;
}

bool HttpsApi::readOnly(const std::string& command) {
  return std::find(kChanging.begin(), kChanging.end(), command) == kChanging.end();
}

Result<std::unique_ptr<HttpsApi>, std::string> HttpsApi::start(const config::HttpsApiConfig& config,
                                                               Handler handler) {
  if (config.listen.empty()) {
    return unexpected(std::string("api https: listen is not set"));
  }
  const auto address = config::parseListen(config.listen);
  if (!address) {
    return unexpected("api https listen " + text::quote(config.listen) +
                      " is not IPV4:PORT or [IPV6]:PORT");
  }
  if (config.allowed_clients.empty()) {
    return unexpected(
        std::string("api https allowed-clients is empty: no controller could use the API; name the "
                    "controllers' certificate names"));
  }
  for (const auto& name : config.allowed_clients) {
    if (name.empty()) {
      return unexpected(std::string("api https allowed-clients holds an empty name"));
    }
    if (auto e = checkAllowed(name); !e.empty()) {
      return unexpected(e);
    }
  }
  if (!handler) {
    return unexpected(std::string("api https: no handler"));
  }

  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->handler = std::move(handler);
  impl->host = address->address.toString();
  impl->port = address->port;
  impl->listening = endpoint(impl->host, impl->port);
  Impl* raw = impl.get();

  std::string context_error;
  impl->server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    auto r = setupContext(&ctx, config, raw);
    if (!r) {
      context_error = r.error();
      return false;
    }
    return true;
  });
  if (!impl->server->is_valid()) {
    return unexpected("api https: " + (context_error.empty()
                                           ? "cannot create a TLS context: " + sslErrors()
                                           : context_error));
  }

  httplib::SSLServer& s = *impl->server;
  s.set_socket_options(socketOptions);
  s.set_tcp_nodelay(true);
  s.set_read_timeout(kTimeoutSeconds, 0);
  s.set_write_timeout(kTimeoutSeconds, 0);
  s.set_keep_alive_max_count(kKeepAliveRequests);
  s.set_keep_alive_timeout(kTimeoutSeconds);
  s.set_payload_max_length(kMaxBody);
  s.new_task_queue = [] { return new BoundedPool(kWorkers, kMaxQueued); };

  // Methods other than GET and POST are refused before their body is read
  // (httplib would read it whole, unbounded, for PUT, PATCH, DELETE, PRI).
  s.set_pre_routing_handler([raw](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "POST") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("Allow", "GET, POST");
    raw->reply(res, 405,
               errorResponse("method " + text::quote(req.method) +
                             " not allowed: POST /api/v1/COMMAND (GET for reading)"));
    return httplib::Server::HandlerResponse::Handled;
  });
  s.Get(".*", [raw](const httplib::Request& req, httplib::Response& res) {
    raw->serve(req, res, nullptr);
  });
  // Every POST reads its body through here, at most kMaxBody bytes
  // whatever the framing (chunked, compressed).
  s.Post(".*", [raw](const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader) {
    std::string body;
    bool too_large = false;
    auto receive = [&](const char* data, size_t n) {
      if (body.size() + n > kMaxBody) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    };
    bool read = false;
    if (req.is_multipart_form_data()) {
      read = reader([](const httplib::MultipartFormData&) { return true; }, receive);
      if (read && !too_large) {
        raw->reply(res, 415, errorResponse("the body must be JSON, not multipart/form-data"));
        return;
      }
    } else {
      read = reader(receive);
    }
    if (too_large || res.status == 413) {
      raw->reply(res, 413,
                 errorResponse("the body is larger than " + std::to_string(kMaxBody) + " bytes"));
      return;
    }
    if (!read) {
      raw->reply(res, 400, errorResponse("cannot read the request's body"));
      return;
    }
    raw->serve(req, res, &body);
  });
  // httplib's own refusals (a malformed request, 413 on Content-Length, 414)
  // get a JSON body too.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([raw](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        const int status = res.status;
        raw->reply(res, status, errorResponse(statusText(status)));
        return httplib::Server::HandlerResponse::Handled;
      }));
  s.set_exception_handler(
      [raw](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = text::escape(e.what(), kMaxLoggedArgs);
        } catch (...) {
        }
        spdlog::error("HTTPS API: {} {} from {}:{} failed: {}", text::quote(req.method),
                      text::quote(req.path), text::escape(req.remote_addr), req.remote_port, what);
        raw->reply(res, 500, errorResponse("internal error: " + what));
      });

  if (const int e = probeBind(address->address, address->port); e != 0) {
    return unexpected("api https: cannot listen on " + impl->listening + ": " + std::strerror(e));
  }
  errno = 0;
  if (!s.bind_to_port(impl->host, impl->port)) {
    const int e = errno;
    return unexpected("api https: cannot listen on " + impl->listening + ": " +
                      (e != 0 ? std::strerror(e) : "bind failed"));
  }
  impl->thread = std::thread([raw] { raw->run(); });
  // Serving when start() returns (and stop() finds it running).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!s.is_running() && !impl->done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("HTTPS API: listening on {} for {}", impl->listening,
               text::escape(
                   [&] {
                     std::string names;
                     for (const auto& n : config.allowed_clients) {
                       names += (names.empty() ? "" : ", ") + n;
                     }
                     return names;
                   }(),
                   512));
  return std::unique_ptr<HttpsApi>(new HttpsApi(std::move(impl)));
}

HttpsApi::Handler viaLoop(
    core::EventLoop& loop,
    std::function<json(const std::string& command, const json& args, const std::string& client)>
        on_loop,
    std::chrono::milliseconds timeout) {
  auto fn = std::make_shared<decltype(on_loop)>(std::move(on_loop));
  return [&loop, fn, timeout](const std::string& command, const json& args,
                              const std::string& client) -> json {
    struct Call {
      std::mutex mutex;
      std::condition_variable cv;
      bool started = false;
      bool cancelled = false;
      bool done = false;
      json body;
      std::exception_ptr error;
    };
    auto call = std::make_shared<Call>();
    loop.post([call, fn, command, args, client] {
      {
        std::lock_guard lock(call->mutex);
        if (call->cancelled) {
          return;  // the request gave up before the loop came to it
        }
        call->started = true;
      }
      json body;
      std::exception_ptr error;
      try {
        body = (*fn)(command, args, client);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(call->mutex);
        call->body = std::move(body);
        call->error = error;
        call->done = true;
      }
      call->cv.notify_all();
    });
    std::unique_lock lock(call->mutex);
    if (!call->cv.wait_for(lock, timeout, [&] { return call->done; })) {
      if (!call->started) {
        call->cancelled = true;
        throw LoopTimeout("the gateway did not take the command within " +
                          std::to_string(timeout.count()) + " ms; it did not run");
      }
      throw LoopTimeout("the gateway did not finish the command within " +
                        std::to_string(timeout.count()) +
                        " ms; it is still running and may take effect");
    }
    if (call->error) {
      std::rethrow_exception(call->error);
    }
    return std::move(call->body);
  };
}

}  // namespace mcgw::api
