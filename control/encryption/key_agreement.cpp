#include "control/encryption/key_agreement.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "config/text.hpp"
#include "control/core/fd.hpp"
#include "control/core/x509_files.hpp"

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif

namespace mcgw::encryption {

using core::namesOf;
using core::readPrivateKey;
using core::sslErrors;

namespace {

constexpr size_t kMaxPath = 256;  // a file path in an error
constexpr int kAcceptsPerDispatch = 16;
constexpr int kReadsPerDispatch = 16;
constexpr int kListenBacklog = 64;
// Far beyond any real count of rekeys; a peer cannot make ours wrap.
constexpr uint64_t kMaxGeneration = uint64_t{1} << 62;

std::string sysError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

// Floods of refused connections are logged at 1, 2, 4, 8, ... (they are all
// counted): a stranger cannot fill the log or hold the loop with it.
bool worthLogging(uint64_t n) {
  return (n & (n - 1)) == 0;
}

// True when the queue's first error is an alert the peer sent.
bool peerAlert(unsigned long e) {
  const int reason = ERR_GET_REASON(e);
  return ERR_GET_LIB(e) == ERR_LIB_SSL && reason >= SSL_AD_REASON_OFFSET &&
         reason < SSL_AD_REASON_OFFSET + 256;
}

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

SockAddr toSockAddr(const config::IpAddress& a, uint16_t port) {
  SockAddr s;
  if (a.family == config::Family::V4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&s.ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, a.bytes.data(), 4);
    s.len = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&s.ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, a.bytes.data(), 16);
    s.len = sizeof(sockaddr_in6);
  }
  return s;
}

std::optional<config::IpAddress> fromSockAddr(const sockaddr_storage& ss) {
  config::IpAddress a;
  if (ss.ss_family == AF_INET) {
    a.family = config::Family::V4;
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, 4);
    return a;
  }
  if (ss.ss_family == AF_INET6) {
    a.family = config::Family::V6;
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, 16);
    return a;
  }
  return std::nullopt;
}

std::string endpoint(const config::IpAddress& a, uint16_t port) {
  return a.family == config::Family::V6 ? "[" + a.toString() + "]:" + std::to_string(port)
                                        : a.toString() + ":" + std::to_string(port);
}

// A nonblocking TCP socket of a's family, IP_FREEBIND (the address may come
// up later), bound to a:port.
Result<core::Fd, std::string> boundSocket(const config::IpAddress& a, uint16_t port,
                                          bool listener) {
  const bool v6 = a.family == config::Family::V6;
  core::Fd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    return unexpected(sysError("socket", errno));
  }
  const int one = 1;
  if (v6) {
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one);
  } else {
    setsockopt(fd.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
  }
  if (listener) {
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  const SockAddr sa = toSockAddr(a, port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa.ss), sa.len) != 0) {
    return unexpected(sysError("bind " + endpoint(a, port), errno));
  }
  return fd;
}

// A dead peer is found within about 30 s even when nothing is being sent.
void keepAlive(int fd) {
  const int one = 1, idle = 10, intvl = 5, cnt = 3;
  const unsigned user_timeout_ms = 30000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Result<std::shared_ptr<void>, std::string> makeContext(const KeyAgreementSettings& s) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_method());
  if (raw == nullptr) {
    return unexpected("cannot create a TLS context: " + sslErrors());
  }
  std::shared_ptr<void> ctx(raw, [](void* p) { SSL_CTX_free(static_cast<SSL_CTX*>(p)); });
  SSL_CTX_set_min_proto_version(raw, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(raw, TLS1_3_VERSION);
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_options(raw, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(raw, 0);
  SSL_CTX_set_session_cache_mode(raw, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(raw, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  struct stat st {};
  if (::stat(s.ca_file.c_str(), &st) != 0) {
    return unexpected(
        sysError("cannot read the CA file " + text::quote(s.ca_file, kMaxPath), errno));
  }
  // OpenSSL reads the files by name: a FIFO or a device would hang it.
  if (!S_ISREG(st.st_mode)) {
    return unexpected("the CA file " + text::quote(s.ca_file, kMaxPath) + " is not a regular file");
  }
  if (SSL_CTX_load_verify_locations(raw, s.ca_file.c_str(), nullptr) != 1) {
    return unexpected("cannot load the CA file " + text::quote(s.ca_file, kMaxPath) + ": " +
                      sslErrors());
  }
  if (::stat(s.certificate_file.c_str(), &st) != 0) {
    return unexpected(sysError(
        "cannot read the certificate file " + text::quote(s.certificate_file, kMaxPath), errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected("the certificate file " + text::quote(s.certificate_file, kMaxPath) +
                      " is not a regular file");
  }
  if (SSL_CTX_use_certificate_chain_file(raw, s.certificate_file.c_str()) != 1) {
    return unexpected("cannot load the certificate file " +
                      text::quote(s.certificate_file, kMaxPath) + ": " + sslErrors());
  }
  auto key = readPrivateKey(s.private_key_file);
  if (!key) {
    return unexpected(key.error());
  }
  if (X509_check_private_key(SSL_CTX_get0_certificate(raw), *key) != 1) {
    EVP_PKEY_free(*key);
    ERR_clear_error();
    return unexpected("the private key " + text::quote(s.private_key_file, kMaxPath) +
                      " does not match the certificate " +
                      text::quote(s.certificate_file, kMaxPath));
  }
  const int used = SSL_CTX_use_PrivateKey(raw, *key);
  EVP_PKEY_free(*key);
  if (used != 1) {
    return unexpected("cannot use the private key of " + text::quote(s.private_key_file, kMaxPath) +
                      ": " + sslErrors());
  }
  if (SSL_CTX_check_private_key(raw) != 1) {
    return unexpected("the private key " + text::quote(s.private_key_file, kMaxPath) +
                      " does not match the certificate " +
                      text::quote(s.certificate_file, kMaxPath));
  }
  return ctx;
}

}  // namespace

const char* toString(LineState s) {
  switch (s) {
    case LineState::kConnecting:
      return "connecting";
    case LineState::kHandshake:
      return "handshake";
    case LineState::kEstablished:
      return "established";
    case LineState::kFailed:
      return "failed";
  }
  return "?";
}

// ---- State

struct KeyAgreement::Conn {
  enum class Phase {
    kConnect,     // client: TCP connect under way
    kTls,         // TLS handshake
    kAwaitOffer,  // server: waits for the client's HELLO (first) or REKEY
    kAwaitReply,  // client: sent HELLO/REKEY, waits for the server's
    kAwaitReady,  // derived and installed, sent READY: waits for the peer's
    kIdle,        // keys in force, no exchange under way
  };
  Line* line = nullptr;
  bool client = false;
  core::Fd fd;
  std::shared_ptr<void> ctx;
  SSL* ssl = nullptr;
  core::Source io;
  core::Source timer;
  core::Source more;  // reads on after kReadsPerDispatch
  uint32_t io_events = 0;
  const char* timeout_what = nullptr;  // what `timer` limits (armTimeout)
  Phase phase = Phase::kConnect;
  bool tls_up = false;
  bool want_write = false;    // OpenSSL needs the socket writable
  bool had_keys = false;      // an exchange completed on this connection
  std::string verify_detail;  // where the peer's chain failed: "depth 1: CN=..."
  std::vector<uint8_t> rx;
  std::vector<uint8_t> tx;
  // The exchange under way.
  MsgType offer = MsgType::kHello;
  uint64_t proposed = 0;
  uint64_t generation = 0;
  uint32_t reserved_spi = 0;     // picked, not installed yet
  uint32_t pending_inbound = 0;  // installed, the peer's READY not seen yet
  SaMaterial outbound;           // to activate on the peer's READY

  ~Conn() {
    io.reset();
    timer.reset();
    more.reset();
    OPENSSL_cleanse(outbound.key.data(), outbound.key.size());
    if (ssl != nullptr) {
      SSL_free(ssl);
    }
  }
};

namespace {

// Notes which certificate of the peer's chain failed first (OpenSSL's result
// code says only why), for the line's status.
int noteVerifyFailure(int ok, X509_STORE_CTX* store) {
  if (ok == 1) {
    return ok;
  }
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* c = ssl != nullptr ? static_cast<KeyAgreement::Conn*>(SSL_get_app_data(ssl)) : nullptr;
  X509* cert = X509_STORE_CTX_get_current_cert(store);
  if (c != nullptr && c->verify_detail.empty() && cert != nullptr) {
    c->verify_detail = "depth " + std::to_string(X509_STORE_CTX_get_error_depth(store)) + ": " +
                       core::subjectOf(cert, core::SubjectText::kEscaped);
  }
  return ok;
}

}  // namespace

struct KeyAgreement::Line {
  KeyLine spec;
  bool client = false;
  LineState state = LineState::kConnecting;
  std::chrono::system_clock::time_point since = std::chrono::system_clock::now();
  std::string last_error;
  std::string peer_subject;
  uint64_t last_generation = 0;  // the highest agreed on this line
  uint64_t generation = 0;       // of the outbound SA in force
  uint32_t inbound_spi = 0;
  uint32_t outbound_spi = 0;
  struct Retiring {
    uint32_t spi;
    core::Source timer;
    bool confirmed;  // replaced after the peer's READY
  };
  std::vector<Retiring> retiring;
  std::chrono::milliseconds backoff{0};
  core::Source retry;
  core::Source rekey_timer;
  uint64_t established = 0;
  uint64_t failures = 0;
  std::unique_ptr<Conn> conn;                  // the line's own connection
  std::vector<std::unique_ptr<Conn>> pending;  // server: accepted, not authenticated yet
};

struct KeyAgreement::Listener {
  config::IpAddress address;
  core::Fd fd;
  core::Source source;
  ~Listener() { source.reset(); }
};

// ---- Construction and configuration

KeyAgreement::KeyAgreement(core::EventLoop& loop, KeyAgreementSettings settings, KeySink sink)
    : loop_(&loop), settings_(std::move(settings)), sink_(std::move(sink)) {}

KeyAgreement::~KeyAgreement() {
  for (auto& [id, line] : lines_) {
    closeNotify(*line);
  }
  lines_.clear();
  listeners_.clear();
}

Result<std::unique_ptr<KeyAgreement>, std::string> KeyAgreement::create(
    core::EventLoop& loop, KeyAgreementSettings settings, KeySink sink) {
  auto ctx = makeContext(settings);
  if (!ctx) {
    return unexpected(ctx.error());
  }
  std::unique_ptr<KeyAgreement> ka(new KeyAgreement(loop, std::move(settings), std::move(sink)));
  ka->ctx_ = std::move(*ctx);
  return ka;
}

Result<bool, std::string> KeyAgreement::check(const KeyAgreementSettings& settings) {
  auto ctx = makeContext(settings);
  if (!ctx) {
    return unexpected(ctx.error());
  }
  return true;
}

template <typename F>
void KeyAgreement::forEachSource(F&& f) {
  f(listen_retry_);
  for (auto& l : listeners_) {
    f(l->source);
  }
  auto conn = [&f](Conn& c) {
    f(c.io);
    f(c.timer);
    f(c.more);
  };
  for (auto& [id, line] : lines_) {
    f(line->retry);
    f(line->rekey_timer);
    for (auto& r : line->retiring) {
      f(r.timer);
    }
    if (line->conn) {
      conn(*line->conn);
    }
    for (auto& c : line->pending) {
      conn(*c);
    }
  }
}

void KeyAgreement::setPaused(bool paused) {
  if (paused == paused_) {
    return;
  }
  paused_ = paused;
  if (paused) {
    // Only what is on now: a one-shot timer that fired stays off.
    forEachSource([this](core::Source& s) {
      if (s && s.enabled()) {
        s.setEnabled(false);
        held_.push_back(&s);
      }
    });
    return;
  }
  // Nothing of the agreement ran meanwhile (setLines, reload and rekey are
  // refused while paused), so every held source still exists where it was.
  auto held = [this](const core::Source& s) {
    return std::find(held_.begin(), held_.end(), &s) != held_.end();
  };
  std::vector<Conn*> rearm;
  for (auto& [id, line] : lines_) {
    for (Conn* c : {line->conn.get()}) {
      if (c != nullptr && c->timer && held(c->timer) && c->timeout_what != nullptr) {
        rearm.push_back(c);
      }
    }
    for (auto& c : line->pending) {
      if (c->timer && held(c->timer) && c->timeout_what != nullptr) {
        rearm.push_back(c.get());
      }
    }
  }
  forEachSource([&](core::Source& s) {
    if (s && held(s)) {
      s.setEnabled(true);
    }
  });
  held_.clear();
  // A connection's time limit starts again: its deadline may have passed
  // during the pause, and the peer's answer waiting in the socket must not
  // lose to it.
  for (Conn* c : rearm) {
    armTimeout(c, c->timeout_what);
  }
}

Result<bool, std::string> KeyAgreement::reload(const KeyAgreementSettings& settings) {
  if (paused_) {
    return unexpected(std::string("the key agreement is paused"));
  }
  auto ctx = makeContext(settings);
  if (!ctx) {
    return unexpected(ctx.error());
  }
  const bool new_port = settings.port != settings_.port;
  settings_ = settings;
  ctx_ = std::move(*ctx);
  if (new_port) {
    listeners_.clear();
    for (auto& [id, line] : lines_) {
      if (line->conn) {
        fail(line->conn.get(), "the key agreement port changed", nullptr, true);
      }
      while (!line->pending.empty()) {
        dropConn(line->pending.back().get());
      }
      line->backoff = std::chrono::milliseconds(0);
      startLine(*line);
    }
    ensureListeners();
  }
  for (auto& [id, line] : lines_) {
    if (line->conn && line->conn->phase == Conn::Phase::kIdle) {
      armRekeyTimer(*line);
    }
  }
  return true;
}

Result<bool, std::string> KeyAgreement::setLines(const std::vector<KeyLine>& lines) {
  if (paused_) {
    return unexpected(std::string("the key agreement is paused"));
  }
  std::map<std::string, const KeyLine*> wanted;
  for (const KeyLine& l : lines) {
    const std::string what = "key agreement line " + text::quote(l.id);
    if (l.id.empty()) {
      return unexpected(std::string("a key agreement line without an id"));
    }
    if (!wanted.emplace(l.id, &l).second) {
      return unexpected(what + " is given twice");
    }
    if (l.peer_name.empty()) {
      return unexpected(what + " has no expected peer name");
    }
    if (l.local.family != l.remote.family) {
      return unexpected(what + ": the local and remote addresses are of different families");
    }
    if (l.local == l.remote) {
      return unexpected(what + ": the local and remote addresses are the same");
    }
  }
  for (auto it = lines_.begin(); it != lines_.end();) {
    auto w = wanted.find(it->first);
    if (w != wanted.end() && *w->second == it->second->spec) {
      ++it;
      continue;
    }
    spdlog::info("encryption: line {}: {}", it->first,
                 w == wanted.end() ? "removed" : "changed, reconnecting");
    Line& line = *it->second;
    closeNotify(line);
    retireAllNow(line);
    pending_ -= line.pending.size();
    it = lines_.erase(it);
  }
  std::vector<Line*> added;
  for (const KeyLine& l : lines) {
    if (lines_.count(l.id) != 0) {
      continue;
    }
    auto line = std::make_unique<Line>();
    line->spec = l;
    line->client = l.local.bytes < l.remote.bytes;
    added.push_back(line.get());
    lines_.emplace(l.id, std::move(line));
  }
  ensureListeners();
  for (Line* line : added) {
    startLine(*line);
  }
  return true;
}

void KeyAgreement::ensureListeners() {
  std::vector<config::IpAddress> want;
  for (auto& [id, line] : lines_) {
    if (!line->client && std::find(want.begin(), want.end(), line->spec.local) == want.end()) {
      want.push_back(line->spec.local);
    }
  }
  std::erase_if(listeners_, [&](const std::unique_ptr<Listener>& l) {
    return std::find(want.begin(), want.end(), l->address) == want.end();
  });
  bool missing = false;
  for (const config::IpAddress& a : want) {
    if (std::any_of(listeners_.begin(), listeners_.end(),
                    [&](const auto& l) { return l->address == a; })) {
      continue;
    }
    auto fd = boundSocket(a, settings_.port, true);
    std::string error;
    if (fd && ::listen(fd->get(), kListenBacklog) != 0) {
      error = sysError("listen on " + endpoint(a, settings_.port), errno);
    } else if (!fd) {
      error = fd.error();
    }
    if (!error.empty()) {
      spdlog::warn("encryption: cannot listen on {}: {}", endpoint(a, settings_.port), error);
      for (auto& [id, line] : lines_) {
        if (!line->client && line->spec.local == a && line->state != LineState::kEstablished) {
          line->last_error = "cannot listen: " + error;
          setState(*line, LineState::kFailed);
        }
      }
      missing = true;
      continue;
    }
    auto l = std::make_unique<Listener>();
    l->address = a;
    l->fd = std::move(*fd);
    Listener* raw = l.get();
    l->source =
        loop_->onReadable(l->fd.get(), "key agreement listener " + endpoint(a, settings_.port),
                          [this, raw] { onAccept(*raw); });
    listeners_.push_back(std::move(l));
  }
  if (missing) {
    listen_retry_ =
        loop_->after(std::chrono::duration_cast<std::chrono::microseconds>(settings_.retry_max),
                     "key agreement listen retry", [this] { ensureListeners(); });
  } else {
    listen_retry_.reset();
  }
}

std::vector<std::string> KeyAgreement::listeners() const {
  std::vector<std::string> out;
  for (const auto& l : listeners_) {
    out.push_back(endpoint(l->address, settings_.port));
  }
  return out;
}

void KeyAgreement::startLine(Line& line) {
  if (!line.client) {
    setState(line, LineState::kConnecting);  // waiting for the peer
    return;
  }
  // On a later iteration: a connect that fails at once reports from a handler.
  line.retry = loop_->defer("key agreement connect " + line.spec.id, [this, &line] {
    line.retry.reset();
    connectClient(line);
  });
}

void KeyAgreement::scheduleRetry(Line& line) {
  if (!line.client) {
    return;
  }
  line.backoff = line.backoff.count() == 0 ? settings_.retry_min
                                           : std::min(line.backoff * 2, settings_.retry_max);
  line.retry = loop_->after(std::chrono::duration_cast<std::chrono::microseconds>(line.backoff),
                            "key agreement retry " + line.spec.id, [this, &line] {
                              line.retry.reset();
                              connectClient(line);
                            });
}

void KeyAgreement::armTimeout(Conn* c, const char* what) {
  c->timeout_what = what;
  c->timer = loop_->after(
      std::chrono::duration_cast<std::chrono::microseconds>(settings_.handshake_timeout),
      "key agreement timeout " + c->line->spec.id, [this, c, what] {
        fail(c, std::string(what) + " timed out", &KeyAgreementCounters::timeouts, true);
      });
}

void KeyAgreement::armRekeyTimer(Line& line) {
  if (!line.client || settings_.rekey_interval.count() <= 0) {
    line.rekey_timer.reset();
    return;
  }
  line.rekey_timer = loop_->every(
      std::chrono::duration_cast<std::chrono::microseconds>(settings_.rekey_interval),
      "key agreement rekey " + line.spec.id, [this, id = line.spec.id] { rekey(id); },
      core::Priority::kNormal);
}

// ---- Connections

void KeyAgreement::connectClient(Line& line) {
  if (line.conn) {
    return;
  }
  setState(line, LineState::kConnecting);
  auto c = std::make_unique<Conn>();
  c->line = &line;
  c->client = true;
  c->ctx = ctx_;
  auto fd = boundSocket(line.spec.local, 0, false);
  if (!fd) {
    line.conn = std::move(c);
    fail(line.conn.get(), "cannot bind to the local address: " + fd.error(),
         &KeyAgreementCounters::connection_errors, false);
    return;
  }
  c->fd = std::move(*fd);
  keepAlive(c->fd.get());
  const SockAddr to = toSockAddr(line.spec.remote, settings_.port);
  const int r = ::connect(c->fd.get(), reinterpret_cast<const sockaddr*>(&to.ss), to.len);
  const int err = errno;
  Conn* raw = c.get();
  line.conn = std::move(c);
  if (r != 0 && err != EINPROGRESS) {
    fail(raw, sysError("connect to " + endpoint(line.spec.remote, settings_.port), err),
         &KeyAgreementCounters::connection_errors, false);
    return;
  }
  raw->phase = Conn::Phase::kConnect;
  raw->io_events = EPOLLOUT;
  raw->io = loop_->onIo(raw->fd.get(), EPOLLOUT, "key agreement " + line.spec.id,
                        [this, raw](uint32_t ev) { onConnIo(raw, ev); });
  armTimeout(raw, "connecting and the key exchange");
  if (r == 0) {
    startTls(raw);
  }
}

void KeyAgreement::onAccept(Listener& l) {
  for (int i = 0; i < kAcceptsPerDispatch; ++i) {
    sockaddr_storage peer{};
    socklen_t plen = sizeof peer;
    core::Fd fd(::accept4(l.fd.get(), reinterpret_cast<sockaddr*>(&peer), &plen,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        spdlog::warn("encryption: accept on {}: {}", endpoint(l.address, settings_.port),
                     std::strerror(errno));
      }
      return;
    }
    ++counters_.accepted;
    sockaddr_storage local{};
    socklen_t llen = sizeof local;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &llen);
    const auto la = fromSockAddr(local);
    const auto ra = fromSockAddr(peer);
    Line* line = nullptr;
    for (auto& [id, candidate] : lines_) {
      if (!candidate->client && la && ra && candidate->spec.local == *la &&
          candidate->spec.remote == *ra) {
        line = candidate.get();
        break;
      }
    }
    if (line == nullptr) {
      ++counters_.unknown_pair;
      if (worthLogging(counters_.unknown_pair)) {
        spdlog::warn(
            "encryption: closed a connection from {} to {}: no line has this pair ({} "
            "so far)",
            ra ? ra->toString() : "?", la ? la->toString() : "?", counters_.unknown_pair);
      }
      continue;
    }
    if (pending_ >= kMaxPending || line->pending.size() >= kMaxPendingPerLine) {
      ++counters_.over_limit;
      if (!worthLogging(counters_.over_limit)) {
        continue;
      }
      spdlog::warn(
          "encryption: line {}: closed a connection from {}: too many waiting for "
          "their handshake",
          line->spec.id, ra->toString());
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->line = line;
    c->client = false;
    c->ctx = ctx_;
    c->fd = std::move(fd);
    keepAlive(c->fd.get());
    Conn* raw = c.get();
    line->pending.push_back(std::move(c));
    ++pending_;
    raw->io = loop_->onIo(raw->fd.get(), EPOLLIN, "key agreement " + line->spec.id,
                          [this, raw](uint32_t ev) { onConnIo(raw, ev); });
    raw->io_events = EPOLLIN;
    armTimeout(raw, "the TLS handshake and the key exchange");
    startTls(raw);
  }
}

void KeyAgreement::startTls(Conn* c) {
  ERR_clear_error();
  c->phase = Conn::Phase::kTls;
  c->ssl = SSL_new(static_cast<SSL_CTX*>(c->ctx.get()));
  if (c->ssl == nullptr || SSL_set_fd(c->ssl, c->fd.get()) != 1) {
    fail(c, "cannot set up TLS: " + sslErrors(), &KeyAgreementCounters::tls_failures, false);
    return;
  }
  SSL_set_app_data(c->ssl, c);
  SSL_set_verify(c->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, noteVerifyFailure);
  if (c->client) {
    SSL_set_connect_state(c->ssl);
    if (c->line->state != LineState::kEstablished) {
      setState(*c->line, LineState::kHandshake);
    }
  } else {
    SSL_set_accept_state(c->ssl);
  }
  driveHandshake(c);
}

void KeyAgreement::onConnIo(Conn* c, uint32_t events) {
  if (c->phase == Conn::Phase::kConnect) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(c->fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
    if (err == 0 && (events & (EPOLLERR | EPOLLHUP)) != 0) {
      err = ECONNRESET;
    }
    if (err != 0) {
      fail(c, sysError("connect to " + endpoint(c->line->spec.remote, settings_.port), err),
           &KeyAgreementCounters::connection_errors, false);
      return;
    }
    if ((events & EPOLLOUT) == 0) {
      return;
    }
    startTls(c);
    return;
  }
  if (c->phase == Conn::Phase::kTls) {
    driveHandshake(c);
    return;
  }
  if (!c->tx.empty() && !flush(c)) {
    return;
  }
  readFrames(c);
}

void KeyAgreement::updateIoEvents(Conn* c) {
  const uint32_t want = static_cast<uint32_t>(EPOLLIN) |
                        ((c->want_write || !c->tx.empty()) ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  if (want != c->io_events) {
    c->io_events = want;
    c->io.setIoEvents(want);
  }
}

// Why a TLS call failed, and which counter it belongs to.
std::pair<std::string, uint64_t KeyAgreementCounters::*> KeyAgreement::tlsFailure(Conn* c, int r,
                                                                                  int err) {
  const int sys = errno;
  const long verify = SSL_get_verify_result(c->ssl);
  if (!c->tls_up && verify != X509_V_OK) {
    ERR_clear_error();
    std::string why =
        std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    if (!c->verify_detail.empty()) {
      why += " (" + c->verify_detail + ")";
    }
    return {why, &KeyAgreementCounters::verify_failures};
  }
  uint64_t KeyAgreementCounters::*counter =
      c->tls_up ? &KeyAgreementCounters::connection_errors : &KeyAgreementCounters::tls_failures;
  const char* stage = c->tls_up ? "TLS connection" : "TLS handshake";
  if (err == SSL_ERROR_ZERO_RETURN) {
    return {"the peer closed the connection", &KeyAgreementCounters::connection_errors};
  }
  if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
    ERR_clear_error();
    if (r == 0 || sys == 0) {
      return {std::string(stage) + ": the peer closed the connection", counter};
    }
    return {sysError(stage, sys), counter};
  }
  const unsigned long first = ERR_peek_error();
  if (first != 0 && peerAlert(first)) {
    return {"the peer ended TLS with an alert: " + sslErrors(),
            &KeyAgreementCounters::tls_failures};
  }
  return {std::string(stage) + " failed: " + sslErrors(), counter};
}

void KeyAgreement::driveHandshake(Conn* c) {
  ERR_clear_error();
  errno = 0;
  const int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    afterHandshake(c);
    return;
  }
  const int err = SSL_get_error(c->ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    c->want_write = err == SSL_ERROR_WANT_WRITE;
    updateIoEvents(c);
    return;
  }
  auto [why, counter] = tlsFailure(c, r, err);
  if (counter == &KeyAgreementCounters::verify_failures) {
    ++counters_.tls_failures;
  }
  fail(c, why, counter, false);
}

void KeyAgreement::afterHandshake(Conn* c) {
  c->tls_up = true;
  c->want_write = false;
  X509* cert = SSL_get0_peer_certificate(c->ssl);
  Line& line = *c->line;
  if (cert == nullptr) {  // SSL_VERIFY_FAIL_IF_NO_PEER_CERT makes this unreachable
    fail(c, "the peer sent no certificate", &KeyAgreementCounters::tls_failures, true);
    return;
  }
  if (X509_check_host(cert, line.spec.peer_name.data(), line.spec.peer_name.size(),
                      X509_CHECK_FLAG_NO_WILDCARDS, nullptr) != 1) {
    fail(c,
         "peer name mismatch: got " + namesOf(cert) + ", want " + text::quote(line.spec.peer_name),
         &KeyAgreementCounters::name_mismatches, true);
    return;
  }
  const std::string subject = core::subjectOf(cert, core::SubjectText::kEscaped);
  if (!c->client) {
    adopt(c);
  }
  line.peer_subject = subject;
  if (line.state != LineState::kEstablished) {
    setState(line, LineState::kHandshake);
  }
  if (c->client) {
    beginExchange(c, MsgType::kHello);
  } else {
    c->phase = Conn::Phase::kAwaitOffer;
    updateIoEvents(c);
    // The client may have sent its HELLO with its last handshake message.
    readFrames(c);
  }
}

void KeyAgreement::adopt(Conn* c) {
  Line& line = *c->line;
  auto it = std::find_if(line.pending.begin(), line.pending.end(),
                         [&](const auto& p) { return p.get() == c; });
  if (it == line.pending.end()) {
    return;
  }
  std::unique_ptr<Conn> owned = std::move(*it);
  line.pending.erase(it);
  --pending_;
  if (line.conn) {
    fail(line.conn.get(), "replaced by a new connection from the peer",
         &KeyAgreementCounters::connection_errors, false);
  }
  line.conn = std::move(owned);
}

void KeyAgreement::readFrames(Conn* c) {
  uint8_t buf[kMaxFrame];
  for (int i = 0; i < kReadsPerDispatch; ++i) {
    ERR_clear_error();
    errno = 0;
    const int n = SSL_read(c->ssl, buf, sizeof buf);
    if (n <= 0) {
      const int err = SSL_get_error(c->ssl, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        c->want_write = err == SSL_ERROR_WANT_WRITE;
        updateIoEvents(c);
        return;
      }
      auto [why, counter] = tlsFailure(c, n, err);
      fail(c, why, counter, false);
      return;
    }
    c->rx.insert(c->rx.end(), buf, buf + n);
    while (!c->rx.empty()) {
      size_t used = 0;
      auto m = decodeMessage(c->rx, &used);
      if (!m) {
        break;
      }
      if (!*m) {
        fail(c, "protocol error: " + m->error(), &KeyAgreementCounters::protocol_errors, true);
        return;
      }
      c->rx.erase(c->rx.begin(), c->rx.begin() + static_cast<ptrdiff_t>(used));
      if (!handleMessage(c, m->value())) {
        return;  // c is gone
      }
    }
  }
  if (SSL_pending(c->ssl) > 0) {
    // Decrypted bytes no socket event will announce: on the next iteration.
    c->more = loop_->defer("key agreement read " + c->line->spec.id, [this, c] {
      c->more.reset();
      readFrames(c);
    });
  }
}

bool KeyAgreement::flush(Conn* c) {
  while (!c->tx.empty()) {
    ERR_clear_error();
    errno = 0;
    const int n = SSL_write(c->ssl, c->tx.data(), static_cast<int>(c->tx.size()));
    if (n > 0) {
      c->tx.erase(c->tx.begin(), c->tx.begin() + n);
      continue;
    }
    const int err = SSL_get_error(c->ssl, n);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
      break;
    }
    auto [why, counter] = tlsFailure(c, n, err);
    fail(c, why, counter, false);
    return false;
  }
  c->want_write = false;
  updateIoEvents(c);
  return true;
}

bool KeyAgreement::send(Conn* c, const Message& m) {
  const auto frame = encodeMessage(m);
  if (c->tx.size() + frame.size() > kMaxTxBuffer) {
    fail(c, "the peer does not read what is sent", &KeyAgreementCounters::connection_errors, false);
    return false;
  }
  c->tx.insert(c->tx.end(), frame.begin(), frame.end());
  return flush(c);
}

// ---- The key exchange

uint32_t KeyAgreement::newSpi() {
  for (int tries = 0; tries < 64; ++tries) {
    uint8_t b[4];
    if (RAND_bytes(b, sizeof b) != 1) {
      return 0;
    }
    const auto spi = static_cast<uint32_t>(getBe(b, 4));
    if (spi >= kMinSpi &&
        std::find(inbound_spis_.begin(), inbound_spis_.end(), spi) == inbound_spis_.end()) {
      inbound_spis_.push_back(spi);
      return spi;
    }
  }
  return 0;
}

void KeyAgreement::releaseSpi(uint32_t spi) {
  std::erase(inbound_spis_, spi);
}

bool KeyAgreement::beginExchange(Conn* c, MsgType type) {
  const uint32_t spi = newSpi();
  if (spi == 0) {
    fail(c, "no random SPI: " + sslErrors(), &KeyAgreementCounters::protocol_errors, true);
    return false;
  }
  c->offer = type;
  c->reserved_spi = spi;
  c->proposed = c->line->last_generation + 1;
  c->phase = Conn::Phase::kAwaitReply;
  if (type == MsgType::kRekey) {
    armTimeout(c, "the rekey");
  }
  return send(c, Message{type, c->proposed, spi, {}});
}

bool KeyAgreement::deriveAndInstall(Conn* c, uint64_t generation, uint32_t client_spi,
                                    uint32_t server_spi) {
  uint8_t context[16];
  putBe(context, generation, 8);
  putBe(context + 8, client_spi, 4);
  putBe(context + 12, server_spi, 4);
  std::array<uint8_t, kExportLen> out{};
  ERR_clear_error();
  if (SSL_export_keying_material(c->ssl, out.data(), out.size(), kExporterLabel,
                                 std::strlen(kExporterLabel), context, sizeof context, 1) != 1) {
    fail(c, "the TLS exporter failed: " + sslErrors(), &KeyAgreementCounters::protocol_errors,
         true);
    return false;
  }
  SaMaterial c2s, s2c;
  c2s.generation = s2c.generation = generation;
  c2s.spi = server_spi;  // the server receives on its SPI
  s2c.spi = client_spi;
  std::copy_n(out.begin(), 32, c2s.key.begin());
  std::copy_n(out.begin() + 32, 4, c2s.salt.begin());
  std::copy_n(out.begin() + 36, 32, s2c.key.begin());
  std::copy_n(out.begin() + 68, 4, s2c.salt.begin());
  OPENSSL_cleanse(out.data(), out.size());
  SaMaterial& inbound = c->client ? s2c : c2s;
  c->outbound = c->client ? c2s : s2c;
  c->generation = generation;
  c->line->last_generation = std::max(c->line->last_generation, generation);
  c->pending_inbound = inbound.spi;
  c->reserved_spi = 0;
  const bool installed = !sink_.install_inbound || sink_.install_inbound(c->line->spec.id, inbound);
  OPENSSL_cleanse(c2s.key.data(), c2s.key.size());
  OPENSSL_cleanse(s2c.key.data(), s2c.key.size());
  if (!installed) {
    // Never READY for an SA that is not there: the peer keeps its SAs.
    c->pending_inbound = 0;
    releaseSpi(inbound.spi);
    fail(c, "the fast path could not install the inbound SA",
         &KeyAgreementCounters::install_failures, true);
    return false;
  }
  c->phase = Conn::Phase::kAwaitReady;
  return true;
}

bool KeyAgreement::handleMessage(Conn* c, const Message& m) {
  using P = Conn::Phase;
  auto outOfTurn = [&] {
    fail(
        c,
        "protocol error: message type " + std::to_string(static_cast<int>(m.type)) + " out of turn",
        &KeyAgreementCounters::protocol_errors, true);
    return false;
  };
  if (m.generation > kMaxGeneration) {
    fail(c, "protocol error: generation " + std::to_string(m.generation) + " is out of range",
         &KeyAgreementCounters::protocol_errors, true);
    return false;
  }
  if (m.type == MsgType::kError) {
    fail(c, "the peer closed the connection: " + text::quote(m.text, kMaxErrorText),
         &KeyAgreementCounters::connection_errors, false);
    return false;
  }
  if (c->client) {
    switch (m.type) {
      case MsgType::kHello:
      case MsgType::kRekey:
        if (c->phase != P::kAwaitReply || m.type != c->offer) {
          return outOfTurn();
        }
        if (m.generation < c->proposed || m.spi < kMinSpi) {
          fail(c,
               "protocol error: the server answered generation " + std::to_string(m.generation) +
                   " SPI " + std::to_string(m.spi) + " to generation " +
                   std::to_string(c->proposed),
               &KeyAgreementCounters::protocol_errors, true);
          return false;
        }
        if (!deriveAndInstall(c, m.generation, c->reserved_spi, m.spi)) {
          return false;
        }
        return send(c, Message{MsgType::kReady, m.generation, 0, {}});
      case MsgType::kReady:
        if (c->phase != P::kAwaitReady || m.generation != c->generation) {
          return outOfTurn();
        }
        onPeerReady(c);
        return true;
      case MsgType::kRekeyRequest:
        if (c->phase == P::kIdle) {
          return beginExchange(c, MsgType::kRekey);
        }
        return true;  // an exchange is under way already
      default:
        return outOfTurn();
    }
  }
  switch (m.type) {
    case MsgType::kHello:
    case MsgType::kRekey: {
      const bool first = m.type == MsgType::kHello;
      if ((first && (c->phase != P::kAwaitOffer || c->had_keys)) ||
          (!first && c->phase != P::kIdle)) {
        return outOfTurn();
      }
      if (m.spi < kMinSpi) {
        fail(c, "protocol error: SPI " + std::to_string(m.spi) + " is reserved",
             &KeyAgreementCounters::protocol_errors, true);
        return false;
      }
      const uint64_t generation = std::max(m.generation, c->line->last_generation + 1);
      const uint32_t spi = newSpi();
      if (spi == 0) {
        fail(c, "no random SPI: " + sslErrors(), &KeyAgreementCounters::protocol_errors, true);
        return false;
      }
      c->reserved_spi = spi;
      if (!first) {
        armTimeout(c, "the rekey");
      }
      if (!deriveAndInstall(c, generation, m.spi, spi)) {
        return false;
      }
      return send(c, Message{m.type, generation, spi, {}}) &&
             send(c, Message{MsgType::kReady, generation, 0, {}});
    }
    case MsgType::kReady:
      if (c->phase != P::kAwaitReady || m.generation != c->generation) {
        return outOfTurn();
      }
      onPeerReady(c);
      return true;
    default:
      return outOfTurn();
  }
}

void KeyAgreement::onPeerReady(Conn* c) {
  Line& line = *c->line;
  if (sink_.activate_outbound && !sink_.activate_outbound(line.spec.id, c->outbound)) {
    OPENSSL_cleanse(c->outbound.key.data(), c->outbound.key.size());
    fail(c, "the fast path could not switch to the new outbound SA",
         &KeyAgreementCounters::install_failures, true);
    return;
  }
  const uint32_t old = line.inbound_spi;
  line.inbound_spi = c->pending_inbound;
  c->pending_inbound = 0;
  if (old != 0 && old != line.inbound_spi) {
    retireLater(line, old, true);
  }
  line.generation = c->generation;
  line.outbound_spi = c->outbound.spi;
  OPENSSL_cleanse(c->outbound.key.data(), c->outbound.key.size());
  c->phase = Conn::Phase::kIdle;
  c->timer.reset();
  ++line.established;
  ++counters_.exchanges;
  spdlog::info(
      "encryption: line {}: generation {} in force (inbound SPI {:#010x}, outbound "
      "SPI {:#010x})",
      line.spec.id, line.generation, line.inbound_spi, line.outbound_spi);
  if (!c->had_keys) {
    c->had_keys = true;
    line.backoff = std::chrono::milliseconds(0);
    line.last_error.clear();
    setState(line, LineState::kEstablished);
    armRekeyTimer(line);
  }
}

bool KeyAgreement::rekey(const std::string& line_id) {
  if (paused_) {
    return false;
  }
  auto it = lines_.find(line_id);
  if (it == lines_.end() || !it->second->conn || !it->second->conn->had_keys) {
    return false;
  }
  Conn* c = it->second->conn.get();
  if (c->phase != Conn::Phase::kIdle) {
    return true;
  }
  if (c->client) {
    beginExchange(c, MsgType::kRekey);
  } else {
    send(c, Message{MsgType::kRekeyRequest, 0, 0, {}});
  }
  return true;
}

void KeyAgreement::retireLater(Line& line, uint32_t spi, bool confirmed) {
  Line::Retiring r{spi, {}, confirmed};
  r.timer = loop_->after(
      std::chrono::duration_cast<std::chrono::microseconds>(settings_.grace),
      "key agreement grace " + line.spec.id, [this, &line, spi] {
        releaseSpi(spi);
        spdlog::info("encryption: line {}: inbound SPI {:#010x} retired", line.spec.id, spi);
        if (sink_.retire_inbound) {
          sink_.retire_inbound(line.spec.id, spi);
        }
        std::erase_if(line.retiring, [spi](const Line::Retiring& x) { return x.spi == spi; });
      });
  line.retiring.push_back(std::move(r));
  // Over its cap, the oldest of the same kind goes now.
  const size_t cap = confirmed ? kMaxRetiringPerLine : kMaxUnconfirmedPerLine;
  while (std::count_if(line.retiring.begin(), line.retiring.end(),
                       [confirmed](const Line::Retiring& x) { return x.confirmed == confirmed; }) >
         static_cast<std::ptrdiff_t>(cap)) {
    auto it =
        std::find_if(line.retiring.begin(), line.retiring.end(),
                     [confirmed](const Line::Retiring& x) { return x.confirmed == confirmed; });
    const uint32_t oldest = it->spi;
    line.retiring.erase(it);
    releaseSpi(oldest);
    spdlog::info("encryption: line {}: inbound SPI {:#010x} retired early ({} newer in grace)",
                 line.spec.id, oldest, cap);
    if (sink_.retire_inbound) {
      sink_.retire_inbound(line.spec.id, oldest);
    }
  }
}

void KeyAgreement::retireAllNow(Line& line) {
  std::vector<uint32_t> spis;
  for (auto& r : line.retiring) {
    spis.push_back(r.spi);
  }
  line.retiring.clear();
  if (line.inbound_spi != 0) {
    spis.push_back(line.inbound_spi);
    line.inbound_spi = 0;
  }
  auto fromConn = [&](Conn& c) {
    if (c.pending_inbound != 0) {
      spis.push_back(c.pending_inbound);
      c.pending_inbound = 0;
    }
    if (c.reserved_spi != 0) {
      releaseSpi(c.reserved_spi);
      c.reserved_spi = 0;
    }
  };
  if (line.conn) {
    fromConn(*line.conn);
  }
  for (auto& p : line.pending) {
    fromConn(*p);
  }
  for (uint32_t spi : spis) {
    releaseSpi(spi);
    if (sink_.retire_inbound) {
      sink_.retire_inbound(line.spec.id, spi);
    }
  }
}

// A close_notify on the line's connection, best effort, so that the peer
// says "closed" rather than "unexpected eof".
void KeyAgreement::closeNotify(Line& line) {
  if (line.conn && line.conn->tls_up) {
    ERR_clear_error();
    SSL_shutdown(line.conn->ssl);
    ERR_clear_error();
  }
}

void KeyAgreement::setState(Line& line, LineState s) {
  if (line.state == s) {
    return;
  }
  spdlog::info(
      "encryption: line {}: {} -> {}{}", line.spec.id, toString(line.state), toString(s),
      s == LineState::kFailed && !line.last_error.empty() ? " (" + line.last_error + ")" : "");
  line.state = s;
  line.since = std::chrono::system_clock::now();
}

void KeyAgreement::fail(Conn* c, const std::string& why, uint64_t KeyAgreementCounters::*counter,
                        bool tell_peer) {
  Line& line = *c->line;
  if (counter != nullptr) {
    ++(counters_.*counter);
  }
  ++line.failures;
  if (tell_peer && c->tls_up && c->ssl != nullptr) {
    // Best effort, once: the connection ends whatever happens.
    const auto frame = encodeMessage(Message{MsgType::kError, 0, 0, why});
    ERR_clear_error();
    SSL_write(c->ssl, frame.data(), static_cast<int>(frame.size()));
    SSL_shutdown(c->ssl);
    ERR_clear_error();
  }
  const bool own = line.conn.get() == c;
  if (c->pending_inbound != 0) {
    // The peer may have switched to it already: it goes after the grace.
    retireLater(line, c->pending_inbound, false);
    c->pending_inbound = 0;
  }
  if (c->reserved_spi != 0) {
    releaseSpi(c->reserved_spi);
    c->reserved_spi = 0;
  }
  if (!own && line.state == LineState::kEstablished) {
    // A failed newcomer does not hide a line that works.
    if (worthLogging(line.failures)) {
      spdlog::warn("encryption: line {}: a new connection failed: {} ({} failures so far)",
                   line.spec.id, why, line.failures);
    }
    dropConn(c);
    return;
  }
  spdlog::warn("encryption: line {}: {}", line.spec.id, why);
  line.last_error = why;
  const bool had_keys = c->had_keys;
  if (own) {
    line.rekey_timer.reset();
  }
  dropConn(c);
  setState(line, LineState::kFailed);
  if (own) {
    if (had_keys && sink_.lost) {
      sink_.lost(line.spec.id, why);
    }
    scheduleRetry(line);
  }
}

void KeyAgreement::dropConn(Conn* c) {
  Line& line = *c->line;
  if (line.conn.get() == c) {
    line.conn.reset();
    return;
  }
  auto it = std::find_if(line.pending.begin(), line.pending.end(),
                         [&](const auto& p) { return p.get() == c; });
  if (it != line.pending.end()) {
    line.pending.erase(it);
    --pending_;
  }
}

// ---- Status

std::optional<KeyLineStatus> KeyAgreement::status(const std::string& line_id) const {
  auto it = lines_.find(line_id);
  if (it == lines_.end()) {
    return std::nullopt;
  }
  const Line& l = *it->second;
  KeyLineStatus s;
  s.id = l.spec.id;
  s.client = l.client;
  s.state = l.state;
  s.last_error = l.last_error;
  s.peer_subject = l.peer_subject;
  s.generation = l.generation;
  s.inbound_spi = l.inbound_spi;
  s.outbound_spi = l.outbound_spi;
  for (const auto& r : l.retiring) {
    s.retiring_spis.push_back(r.spi);
  }
  s.since = l.since;
  s.established = l.established;
  s.failures = l.failures;
  return s;
}

std::vector<KeyLineStatus> KeyAgreement::status() const {
  std::vector<KeyLineStatus> out;
  for (const auto& [id, l] : lines_) {
    out.push_back(*status(id));
  }
  return out;
}

}  // namespace mcgw::encryption
