// BFD session state from FRR's bfdd, through bfdd's control socket (bfdd
// --bfdctl PATH, a Unix stream socket), so that mcgwd can take an underlay
// line out of use the moment its BFD session goes down instead of waiting
// for zebra to withdraw routes.
//
// The protocol (FRR bfdd/bfdctl.h and bfdd/control.c, checked against bfdd
// 8.4): every message is an 8-byte header, { uint32 length of the payload
// (network order), uint16 id, uint8 type, uint8 version = 1 }, then the
// payload.  A client sends NOTIFY (type 4) with an 8-byte mask of what it
// wants (bfdd copies it as is, so host byte order); bfdd answers RESPONSE
// (type 1, {"status":"ok"}), then sends NOTIFY messages (id 0) with JSON:
// one "status" per existing session at once, one on every state change,
// and, with the config bit, "add" / "update" / "delete" of sessions.
// docs/routing.md "BFD state from bfdd" has the literal JSON bfdd sends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/net.hpp"
#include "config/result.hpp"
#include "control/core/event_loop.hpp"

namespace mcgw::frr {

// bfdd's message types (bfdctl.h enum bc_msg_type).
inline constexpr uint8_t kBfdMsgResponse = 1;
inline constexpr uint8_t kBfdMsgRequestAdd = 2;
inline constexpr uint8_t kBfdMsgRequestDel = 3;
inline constexpr uint8_t kBfdMsgNotify = 4;
inline constexpr uint8_t kBfdMsgNotifyAdd = 5;
inline constexpr uint8_t kBfdMsgNotifyDel = 6;
inline constexpr uint8_t kBfdMsgVersion = 1;
inline constexpr size_t kBfdHeaderSize = 8;
// Largest payload accepted: bfdd's notifications are a few hundred bytes.
inline constexpr size_t kBfdMaxPayload = 64 * 1024;

// NOTIFY mask bits (bfdctl.h BCM_NOTIFY_*).
inline constexpr uint64_t kBfdNotifyPeerState = 1ULL << 0;
inline constexpr uint64_t kBfdNotifyConfig = 1ULL << 1;

// One BFD session as bfdd reports it.  The session's key is (peer, local,
// multihop, vrf, interface).
struct BfdPeerState {
  config::IpAddress peer;
  std::optional<config::IpAddress> local;  // "local-address"
  bool multihop = false;
  std::string vrf;  // "vrf-name" as bfdd says (multihop: "default"), "" if absent
  // kUnknown: bfdd said "unknown", or (from the client) bfdd deleted the
  // session, so it no longer tells anything about the path.
  enum class State { kUnknown, kAdminDown, kDown, kInit, kUp } state = State::kUnknown;
  uint32_t id = 0;                 // bfdd's local discriminator ("id")
  uint8_t remote_diagnostics = 0;  // "remote-diagnostics" (7: the remote is administratively down)
  std::string interface;           // "local-interface" (single hop bound to one), "" if absent
  bool operator==(const BfdPeerState&) const = default;

  // Same session (everything but state and id).
  bool sameSession(const BfdPeerState& o) const {
    return peer == o.peer && local == o.local && multihop == o.multihop && vrf == o.vrf &&
           interface == o.interface;
  }
};

const char* toString(BfdPeerState::State s);

// Pure codec.

// A NOTIFY request (type 4): the header, id in network order, and the flag
// mask in host byte order (bfdd memcpy's it).
std::vector<uint8_t> encodeNotifyRequest(uint16_t id, uint64_t flags);

// Splits bfdd's byte stream into messages.  It holds at most one partial
// message; a header announcing more than kBfdMaxPayload, or a version other
// than 1, makes the stream unusable (next() keeps returning that error).
class BfdControlDecoder {
 public:
  void feed(std::span<const uint8_t> bytes);
  struct Message {
    uint8_t type = 0;
    uint16_t id = 0;
    std::string json;
  };
  // A complete message, nullopt when more bytes are needed, or the error
  // that made the stream unusable.
  std::optional<Result<Message, std::string>> next();
  void reset();

 private:
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;  // consumed bytes at the front of buf_
  std::string error_;
};

// A NOTIFY's JSON: a session's state for "op":"status", nullopt for the
// other ops (config "add", "update", "delete"), an error for bad JSON or a
// missing or malformed field.  The bytes are untrusted: field lengths are
// bounded and nothing throws out.
Result<std::optional<BfdPeerState>, std::string> parseBfdNotify(std::string_view json);
// "op":"delete" (config notifications): the deleted session's key with
// state kUnknown; nullopt for other ops.  bfdd 8.4 sends it when bgpd (or
// another client through zebra) removes its session; a session deleted from
// bfdd's own configuration gets a last "status" "down" instead.
Result<std::optional<BfdPeerState>, std::string> parseBfdDelete(std::string_view json);

// The client on mcgwd's event loop: connects (non-blocking) to bfdd's
// control socket, subscribes to every session's state and to config
// changes (to learn of deleted sessions), calls on_change for each status
// notification and for each deleted session (state kUnknown, then dropped
// from states()), and keeps the last state per session.  When the socket is
// absent or refuses, or closes (bfdd restarts), states() becomes empty,
// connected() false, on_disconnect is called (once per loss of a working
// connection), and it retries every retry period.  Loop thread only; the
// callbacks must not destroy the client.
class BfdControlClient {
 public:
  using OnChange = std::function<void(const BfdPeerState&)>;
  BfdControlClient(std::string socket_path, OnChange on_change,
                   std::function<void()> on_disconnect = {});
  ~BfdControlClient();
  BfdControlClient(const BfdControlClient&) = delete;
  BfdControlClient& operator=(const BfdControlClient&) = delete;

  // Connects now and registers its sources on loop, which must outlive the
  // client.  Once.
  void attach(core::EventLoop& loop,
              std::chrono::milliseconds retry = std::chrono::milliseconds(500));
  // Paused: nothing is read or dispatched and no retry runs (bfdd's
  // notifications wait in the socket); resumed, they are read in order.
  void setPaused(bool paused);
  // Subscribed: bfdd answered the NOTIFY request with "ok".
  bool connected() const { return subscribed_; }
  const std::vector<BfdPeerState>& states() const { return states_; }
  std::string lastError() const { return last_error_; }
  const std::string& socketPath() const { return path_; }

 private:
  void connectNow();
  void onReadable(uint32_t events);
  void drain();
  void handle(const BfdControlDecoder::Message& m);
  void apply(const BfdPeerState& s);
  void drop(const BfdPeerState& key);
  void fail(std::string why);
  void scheduleRetry();

  std::string path_;
  OnChange on_change_;
  std::function<void()> on_disconnect_;
  core::EventLoop* loop_ = nullptr;
  std::chrono::milliseconds retry_{500};
  int fd_ = -1;
  core::Source io_;
  core::Source retry_timer_;
  core::Source drain_;  // resumed: the messages read before the pause
  bool paused_ = false;
  bool retry_due_ = false;  // the retry came while paused
  bool subscribed_ = false;
  bool outage_logged_ = false;
  uint16_t next_id_ = 1;
  uint16_t request_id_ = 0;
  BfdControlDecoder decoder_;
  std::vector<uint8_t> read_buf_;
  std::vector<BfdPeerState> states_;
  std::string last_error_;
};

}  // namespace mcgw::frr
