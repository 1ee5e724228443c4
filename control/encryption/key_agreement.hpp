// ESP keys for underlay lines, agreed between two gateways over a mutually
// authenticated TLS 1.3 connection (OpenSSL 3.0 libssl) on the control loop,
// and derived with the TLS exporter only (RFC 5705 / RFC 8446 §7.5), as
// DTLS-SRTP does (RFC 5764): no cryptography of our own (issue 18, part 3;
// docs/encryption.md).
//
// One TLS connection per line, over the line's own addresses.  The side whose
// local address is lower (byte-wise; both of one family) is the TLS client:
// it binds its socket to the local address and connects to remote:port.  The
// other side listens on one socket per distinct local address (bound to that
// address, not the wildcard: key agreement runs only on the underlay
// addresses of lines, never on the management network or a tenant-facing
// address, and the accepted socket's local address is then the line's own),
// and matches an accepted connection to a line by its (local, remote)
// address pair; an unknown pair is closed at once and counted.  Both sockets
// use IP_FREEBIND, so a listener is up before its address is.
//
// TLS: 1.3 only; both sides verify the peer's chain against the CA file
// (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT); after the handshake
// each side checks the peer certificate's name against the line's expected
// peer name (X509_check_host: a DNS SAN, or the subject CN when there is no
// DNS SAN; no wildcards).  No session tickets, no resumption: every
// connection is a full handshake with fresh secrets.  A gateway is the
// client on some lines and the server on others, so its certificate's
// extended key usage must allow both serverAuth and clientAuth (or be
// absent).  OpenSSL sends the chain it can build from the CA file, so a
// status may say "self-signed certificate in certificate chain (depth 1:
// CN=...)" for a peer whose CA we do not trust.
//
// The protocol on the TLS connection: the frames of key_wire.hpp (HELLO,
// READY, REKEY, REKEY-REQUEST, ERROR; a version, at most kMaxFrame bytes).
// Any other version, type or length, or a frame out of turn, closes the
// connection with a reason (sent as ERROR, best effort, and kept in the
// line's status).  Each side picks its own inbound SPI (RAND_bytes; >= 256,
// unique among the inbound SAs this instance holds).
//
//   client                                  server
//   HELLO{g_c, spi_c}            ------->
//                                           g = max(g_c, server's last + 1)
//                                           derive, install_inbound(spi_s)
//                                <-------   HELLO{g, spi_s}, READY{g}
//   derive (g >= g_c required),
//   install_inbound(spi_c),
//   READY{g}                     ------->
//   on READY: activate_outbound(spi_s)      on READY: activate_outbound(spi_c)
//
// so no side sends to an SPI its peer has not installed (make-before-break).
// A rekey is the same exchange with REKEY in place of HELLO, started by the
// client (rekey(), or its rekey_interval timer); the server asks for one with
// REKEY-REQUEST.  After a switch the previous inbound SA is retired
// (retire_inbound) after the grace period; the previous outbound one is just
// replaced.  A new connection after a loss is the same: a higher generation,
// new SPIs and keys, the inbound SA of before retired after the grace.  A
// connection that ends between a side's install_inbound and the peer's
// READY retires that SA after the grace too (the peer may have switched).
// The generation only grows on a line (both sides keep their highest; a
// peer's beyond 2^62 is refused).
//
// Derivation: SSL_export_keying_material(label "EXPORTER-mcgw-esp-v1",
// context = generation (8, BE) || client's SPI (4, BE) || server's SPI (4,
// BE), 72 bytes) = client->server key (32) salt (4), server->client key
// (32) salt (4).  The client's inbound SA is (client's SPI, server->client
// key); the server's is (server's SPI, client->server key).
//
// Bounds: a frame is at most kMaxFrame bytes; at most kMaxPendingPerLine
// accepted connections per line and kMaxPending in all wait for their
// handshake (more are closed and counted); a connection must finish TLS and
// its first key exchange, and every rekey, within handshake_timeout; at most
// kMaxTxBuffer bytes wait to be written.  Reconnects back off from
// retry_min, doubling up to retry_max.  Strings taken from a peer
// certificate or an ERROR frame are escaped and bounded (mcgw::text).
//
// Threads: everything runs on the EventLoop's thread.  Callbacks are called
// from the loop's handlers, and from inside setLines() (retire_inbound of a
// removed line), reload() (lost() when a new port ends the connections) and
// rekey() (lost() when the write fails); they must not call
// setLines() or reload() or destroy the instance (rekey() and status() are
// fine).  Nothing blocks; no exception leaves a handler.  The process must
// ignore SIGPIPE (mcgwd does): OpenSSL writes to the sockets.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"
#include "control/core/event_loop.hpp"
#include "control/encryption/key_wire.hpp"

namespace mcgw::encryption {

inline constexpr uint16_t kDefaultPort = 4794;
inline constexpr char kExporterLabel[] = "EXPORTER-mcgw-esp-v1";
inline constexpr size_t kExportLen = 72;  // 2 x (key 32 + salt 4)

// Bounds of the whole component.
inline constexpr size_t kMaxPendingPerLine = 4;
inline constexpr size_t kMaxPending = 64;
inline constexpr size_t kMaxTxBuffer = 4096;
inline constexpr uint32_t kMinSpi = 256;  // 1..255 are reserved (RFC 4303 §2.1)
// Inbound SAs a line keeps in their grace period: replaced by a completed
// rekey (the peer switched away from them: a third retires the oldest at
// once), and installed for an exchange that failed before the peer's READY
// (the peer may be sending on one of them: more of them, the oldest retired
// first).  A peer rekeying or reconnecting in a loop cannot pile up SAs.
inline constexpr size_t kMaxRetiringPerLine = 2;
inline constexpr size_t kMaxUnconfirmedPerLine = 4;

struct KeyAgreementSettings {
  std::string ca_file;           // PEM, the CA(s) peers' certificates chain to
  std::string certificate_file;  // PEM, this gateway's certificate (chain)
  std::string private_key_file;  // PEM; refused unless mode 0600 or 0400 (no group/other bits)
  uint16_t port = kDefaultPort;
  // The client rekeys every interval on its own (0: only when rekey() is
  // called; the fast path calls it before a lifetime ends).
  std::chrono::milliseconds rekey_interval{0};
  // How long an inbound SA stays after the peer switched away from it.
  std::chrono::milliseconds grace{10000};
  std::chrono::milliseconds retry_min{1000};
  std::chrono::milliseconds retry_max{30000};
  std::chrono::milliseconds handshake_timeout{10000};
};

// One underlay line to agree keys on.
struct KeyLine {
  std::string id;         // "peer/line"
  std::string peer_name;  // the name the peer's certificate must carry
  config::IpAddress local;
  config::IpAddress remote;  // the same family as local
  bool operator==(const KeyLine&) const = default;
};

// One direction's SA: AES-256-GCM key and RFC 4106 salt, from the exporter.
struct SaMaterial {
  uint64_t generation = 0;
  uint32_t spi = 0;
  std::array<uint8_t, 32> key{};
  std::array<uint8_t, 4> salt{};
};

// What the fast path is told.  Every member may be empty.  A SaMaterial is
// valid during the call only (its key is wiped after): copy it, never log it.
struct KeySink {
  // Install an inbound SA (before the peer can send on it).  false: it could
  // not be installed (the fast path's crypto sessions ran out, ...); the
  // exchange fails and READY is never sent, so the peer keeps its SAs.
  std::function<bool(const std::string& line, const SaMaterial&)> install_inbound;
  // Switch the line's outbound traffic to this SA (replaces the previous).
  // false: not switched; the connection ends and a new exchange follows.
  std::function<bool(const std::string& line, const SaMaterial&)> activate_outbound;
  // Remove an inbound SA (the grace period after a switch is over, or the
  // line was removed).
  std::function<void(const std::string& line, uint32_t spi)> retire_inbound;
  // The line's connection ended after it had agreed keys (failures before
  // that show only in status()): the SAs are kept; the fast path decides how
  // long to use them.  A reconnection follows (client) or is awaited
  // (server).
  std::function<void(const std::string& line, const std::string& why)> lost;
};

enum class LineState : uint8_t {
  kConnecting,   // client: connecting (or waiting to retry); server: waiting for the peer
  kHandshake,    // TLS or the first key exchange under way
  kEstablished,  // keys agreed on this connection (it stays so during rekeys)
  kFailed,       // the last connection ended in an error (last_error); client: retrying
};
const char* toString(LineState s);

// What `mcgwctl status` shows of a line.
struct KeyLineStatus {
  std::string id;
  bool client = false;  // this side is the TLS client
  LineState state = LineState::kConnecting;
  std::string last_error;    // "" when none since the last establishment
  std::string peer_subject;  // escaped, bounded ("" before a peer was verified)
  uint64_t generation = 0;   // of the active outbound SA (0: none yet)
  uint32_t inbound_spi = 0;
  uint32_t outbound_spi = 0;
  std::vector<uint32_t> retiring_spis;            // inbound SAs in their grace period
  std::chrono::system_clock::time_point since{};  // when state was entered
  uint64_t established = 0;                       // key exchanges completed (rekeys included)
  uint64_t failures = 0;                          // connections that ended in an error
};

// Instance-wide counters.
struct KeyAgreementCounters {
  uint64_t accepted = 0;           // connections accepted on a listener
  uint64_t unknown_pair = 0;       // closed: no line has that (local, remote) pair
  uint64_t over_limit = 0;         // closed: too many connections waiting for a handshake
  uint64_t tls_failures = 0;       // TLS handshakes that failed (verification included)
  uint64_t verify_failures = 0;    // ... of which this side refused the peer's chain
  uint64_t name_mismatches = 0;    // peer certificate without the expected name
  uint64_t protocol_errors = 0;    // malformed, oversize, wrong version or out-of-turn frames
  uint64_t connection_errors = 0;  // resets, closes and connect failures
  uint64_t timeouts = 0;           // handshake or rekey not done in time
  uint64_t install_failures = 0;   // the fast path refused an SA (exchange failed)
  uint64_t exchanges = 0;          // key exchanges completed (both READYs)
};

class KeyAgreement {
 public:
  // Reads the CA, certificate and key files (the key only at mode 0600/0400)
  // and checks they match.  No line yet: setLines() starts the work.
  static Result<std::unique_ptr<KeyAgreement>, std::string> create(core::EventLoop& loop,
                                                                   KeyAgreementSettings settings,
                                                                   KeySink sink);
  // Closes every connection and listener; no callback is called.
  ~KeyAgreement();
  KeyAgreement(const KeyAgreement&) = delete;
  KeyAgreement& operator=(const KeyAgreement&) = delete;

  // The lines to agree keys on, again on every reload.  A line whose KeyLine
  // is unchanged keeps its connection and SAs; a removed or changed line is
  // closed and its inbound SAs retired at once (retire_inbound; no lost()).
  // Refused as a whole, nothing changed, when a line is invalid (empty or
  // duplicate id, empty peer name, families differ, local == remote).
  Result<bool, std::string> setLines(const std::vector<KeyLine>& lines);

  // Re-reads the files and takes the other settings (reload).  Refused,
  // nothing changed, when a file cannot be used.  Connections that exist
  // keep theirs; new ones use the new files.  A new port reopens the
  // listeners and reconnects every line.
  Result<bool, std::string> reload(const KeyAgreementSettings& settings);

  // Checks the files of `settings` as reload() would, without changing
  // anything (a reload's prepare, off the loop thread).
  static Result<bool, std::string> check(const KeyAgreementSettings& settings);

  // Paused: none of the agreement's connections, listeners or timers run
  // (a reload is under way: no SA is installed, no READY sent); they go on
  // where they were when resumed, a connection's own time limit from the
  // start again.  setLines, reload and rekey are refused while paused.  Loop
  // thread.
  void setPaused(bool paused);

  // Starts a rekey of the line now: the client sends REKEY, the server
  // REKEY-REQUEST.  False when the line is unknown or has no established
  // connection; true (and nothing more) while an exchange is under way.
  bool rekey(const std::string& line_id);

  std::vector<KeyLineStatus> status() const;
  std::optional<KeyLineStatus> status(const std::string& line_id) const;
  KeyAgreementCounters counters() const { return counters_; }
  // Bound listeners, as "address:port" (tests, status).
  std::vector<std::string> listeners() const;

  struct Line;
  struct Conn;
  struct Listener;

 private:
  KeyAgreement(core::EventLoop& loop, KeyAgreementSettings settings, KeySink sink);

  // Connections.  A function given a Conn* may end it (fail()); those that
  // return bool say whether it still exists.
  void startLine(Line& line);
  void connectClient(Line& line);
  void scheduleRetry(Line& line);
  void ensureListeners();
  void onAccept(Listener& l);
  void startTls(Conn* c);
  void onConnIo(Conn* c, uint32_t events);
  void driveHandshake(Conn* c);
  void afterHandshake(Conn* c);
  void adopt(Conn* c);  // a server connection authenticated: becomes its line's own
  void readFrames(Conn* c);
  bool handleMessage(Conn* c, const Message& m);
  bool flush(Conn* c);
  bool send(Conn* c, const Message& m);
  void updateIoEvents(Conn* c);
  void armTimeout(Conn* c, const char* what);
  void armRekeyTimer(Line& line);
  std::pair<std::string, uint64_t KeyAgreementCounters::*> tlsFailure(Conn* c, int r, int err);
  // Ends c: counts, logs, records why in its line (unless a working line's
  // newcomer failed), reports lost() when c had given keys, retries (client).
  void fail(Conn* c, const std::string& why, uint64_t KeyAgreementCounters::*counter,
            bool tell_peer);
  void dropConn(Conn* c);

  // Key exchange.
  bool beginExchange(Conn* c, MsgType type);
  bool deriveAndInstall(Conn* c, uint64_t generation, uint32_t client_spi, uint32_t server_spi);
  void onPeerReady(Conn* c);
  uint32_t newSpi();  // 0: no randomness
  void releaseSpi(uint32_t spi);
  // confirmed: replaced after the peer's READY (else: an exchange failed).
  void retireLater(Line& line, uint32_t spi, bool confirmed);
  void retireAllNow(Line& line);
  void setState(Line& line, LineState s);
  void closeNotify(Line& line);
  template <typename F>
  void forEachSource(F&& f);

  core::EventLoop* loop_;  // outlives this
  KeyAgreementSettings settings_;
  KeySink sink_;
  std::shared_ptr<void> ctx_;  // SSL_CTX, shared with the connections made with it
  std::map<std::string, std::unique_ptr<Line>> lines_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  core::Source listen_retry_;
  std::vector<uint32_t> inbound_spis_;  // every inbound SPI reserved or installed (all lines)
  size_t pending_ = 0;                  // accepted connections not adopted yet
  KeyAgreementCounters counters_;
  bool paused_ = false;
  std::vector<const core::Source*> held_;  // disabled by setPaused(true)
};

}  // namespace mcgw::encryption
