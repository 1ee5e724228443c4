#include "control/frr/bfd_control.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include "config/text.hpp"

namespace mcgw::frr {

namespace {

using nlohmann::json;

// Bounds on what bfdd's fields can hold: an address in text (INET6_ADDRSTRLEN
// is 46), VRF and interface names (FRR: 36 and 20 bytes).  Anything longer
// is not from bfdd.
constexpr size_t kMaxAddressText = 64;
constexpr size_t kMaxNameText = 64;
constexpr size_t kMaxOpText = 16;

using Parsed = Result<std::optional<BfdPeerState>, std::string>;

Unexpected<std::string> bad(std::string why) {
  return unexpected(std::move(why));
}

// A string field: nullopt when absent, an error when not a string or too long.
Result<std::optional<std::string>, std::string> stringField(const json& o, const char* key,
                                                            size_t max) {
  const auto it = o.find(key);
  if (it == o.end()) {
    return std::optional<std::string>();
  }
  if (!it->is_string()) {
    return bad(std::string("\"") + key + "\" is not a string");
  }
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max) {
    return bad(std::string("\"") + key + "\" is longer than " + std::to_string(max));
  }
  return std::optional<std::string>(s);
}

Result<config::IpAddress, std::string> addressField(const json& o, const char* key) {
  auto s = stringField(o, key, kMaxAddressText);
  if (!s) {
    return bad(s.error());
  }
  if (!*s) {
    return bad(std::string("no \"") + key + "\"");
  }
  auto a = config::IpAddress::parse(**s);
  if (!a) {
    return bad(std::string("\"") + key + "\" is not an address");
  }
  return *a;
}

std::optional<BfdPeerState::State> stateFromText(std::string_view s) {
  using S = BfdPeerState::State;
  if (s == "up") {
    return S::kUp;
  }
  if (s == "down") {
    return S::kDown;
  }
  if (s == "init") {
    return S::kInit;
  }
  if (s == "adm-down") {
    return S::kAdminDown;
  }
  // bfdd's own word for a state it cannot name (config_notify's default).
  if (s == "unknown") {
    return S::kUnknown;
  }
  return std::nullopt;
}

// The session key every notification carries (json_object_add_peer in
// bfdd/config.c): "multihop", "peer-address", and when set "local-address",
// "vrf-name", "local-interface"; "ipv6" must agree with the addresses.
Result<BfdPeerState, std::string> sessionKey(const json& o) {
  BfdPeerState s;
  const auto mh = o.find("multihop");
  if (mh == o.end() || !mh->is_boolean()) {
    return bad("no boolean \"multihop\"");
  }
  s.multihop = mh->get<bool>();
  auto peer = addressField(o, "peer-address");
  if (!peer) {
    return bad(peer.error());
  }
  s.peer = *peer;
  if (o.contains("local-address")) {
    auto local = addressField(o, "local-address");
    if (!local) {
      return bad(local.error());
    }
    if (local->family != s.peer.family) {
      return bad("\"local-address\" and \"peer-address\" differ in family");
    }
    s.local = *local;
  }
  const auto v6 = o.find("ipv6");
  if (v6 != o.end()) {
    if (!v6->is_boolean()) {
      return bad("\"ipv6\" is not a boolean");
    }
    if (v6->get<bool>() != (s.peer.family == config::Family::V6)) {
      return bad("\"ipv6\" disagrees with \"peer-address\"");
    }
  }
  auto vrf = stringField(o, "vrf-name", kMaxNameText);
  if (!vrf) {
    return bad(vrf.error());
  }
  s.vrf = vrf->value_or("");
  auto ifname = stringField(o, "local-interface", kMaxNameText);
  if (!ifname) {
    return bad(ifname.error());
  }
  s.interface = ifname->value_or("");
  return s;
}

struct Notify {
  std::string op;
  json body;
};

Result<Notify, std::string> parseObject(std::string_view text) {
  json o = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded()) {
    return bad("not JSON");
  }
  if (!o.is_object()) {
    return bad("not a JSON object");
  }
  auto op = stringField(o, "op", kMaxOpText);
  if (!op) {
    return bad(op.error());
  }
  if (!*op) {
    return bad("no \"op\"");
  }
  return Notify{**op, std::move(o)};
}

Parsed parseStatus(const json& o) {
  auto key = sessionKey(o);
  if (!key) {
    return bad(key.error());
  }
  BfdPeerState s = std::move(*key);
  auto state = stringField(o, "state", kMaxOpText);
  if (!state) {
    return bad(state.error());
  }
  if (!*state) {
    return bad("no \"state\"");
  }
  const auto st = stateFromText(**state);
  if (!st) {
    return bad("unknown \"state\" \"" + **state + "\"");
  }
  s.state = *st;
  const auto id = o.find("id");
  if (id == o.end() || !id->is_number_integer()) {
    return bad("no integer \"id\"");
  }
  // json-c prints bfdd's uint32 discriminator as a non-negative int64.
  const bool in_range = id->is_number_unsigned()
                            ? id->get<uint64_t>() <= UINT32_MAX
                            : id->get<int64_t>() >= 0 && id->get<int64_t>() <= int64_t{UINT32_MAX};
  if (!in_range) {
    return bad("\"id\" is out of range");
  }
  s.id = static_cast<uint32_t>(id->get<uint64_t>());
  // The diagnostic the remote system sent (RFC 5880 6.8.17: 7 is
  // administratively down); absent or odd: 0.
  const auto rd = o.find("remote-diagnostics");
  if (rd != o.end() && rd->is_number_integer() && rd->get<int64_t>() >= 0 &&
      rd->get<int64_t>() <= 31) {
    s.remote_diagnostics = static_cast<uint8_t>(rd->get<int64_t>());
  }
  return std::optional<BfdPeerState>(std::move(s));
}

}  // namespace

const char* toString(BfdPeerState::State s) {
  switch (s) {
    case BfdPeerState::State::kUnknown:
      return "unknown";
    case BfdPeerState::State::kAdminDown:
      return "adm-down";
    case BfdPeerState::State::kDown:
      return "down";
    case BfdPeerState::State::kInit:
      return "init";
    case BfdPeerState::State::kUp:
      return "up";
  }
  return "unknown";
}

std::vector<uint8_t> encodeNotifyRequest(uint16_t id, uint64_t flags) {
  std::vector<uint8_t> out(kBfdHeaderSize + sizeof flags);
  const uint32_t length = htonl(sizeof flags);
  const uint16_t nid = htons(id);
  std::memcpy(out.data(), &length, sizeof length);
  std::memcpy(out.data() + 4, &nid, sizeof nid);
  out[6] = kBfdMsgNotify;
  out[7] = kBfdMsgVersion;
  // Host byte order: bfdd memcpy's the mask into its uint64_t.
  std::memcpy(out.data() + kBfdHeaderSize, &flags, sizeof flags);
  return out;
}

void BfdControlDecoder::feed(std::span<const uint8_t> bytes) {
  if (!error_.empty()) {
    return;
  }
  // Drop what was consumed before growing, so the buffer holds at most one
  // partial message plus this feed.
  if (pos_ > 0) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
  }
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

std::optional<Result<BfdControlDecoder::Message, std::string>> BfdControlDecoder::next() {
  using R = Result<Message, std::string>;
  if (!error_.empty()) {
    return R(bad(error_));
  }
  const size_t avail = buf_.size() - pos_;
  if (avail < kBfdHeaderSize) {
    return std::nullopt;
  }
  const uint8_t* h = buf_.data() + pos_;
  uint32_t length = 0;
  uint16_t id = 0;
  std::memcpy(&length, h, sizeof length);
  std::memcpy(&id, h + 4, sizeof id);
  length = ntohl(length);
  if (h[7] != kBfdMsgVersion) {
    error_ = "message version " + std::to_string(h[7]) + " (only 1 is known)";
    return R(bad(error_));
  }
  if (length > kBfdMaxPayload) {
    error_ = "message of " + std::to_string(length) + " bytes (at most " +
             std::to_string(kBfdMaxPayload) + ")";
    return R(bad(error_));
  }
  if (avail < kBfdHeaderSize + length) {
    return std::nullopt;
  }
  Message m;
  m.type = h[6];
  m.id = ntohs(id);
  m.json.assign(reinterpret_cast<const char*>(h + kBfdHeaderSize), length);
  pos_ += kBfdHeaderSize + length;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return R(std::move(m));
}

void BfdControlDecoder::reset() {
  buf_.clear();
  pos_ = 0;
  error_.clear();
}

Parsed parseBfdNotify(std::string_view text) {
  try {
    auto n = parseObject(text);
    if (!n) {
      return bad(n.error());
    }
    if (n->op != "status") {
      return std::optional<BfdPeerState>();
    }
    return parseStatus(n->body);
  } catch (const std::exception& e) {
    // Not expected (every access is checked first); untrusted input must
    // still never throw out.
    return bad(std::string("bad notification: ") + e.what());
  }
}

Parsed parseBfdDelete(std::string_view text) {
  try {
    auto n = parseObject(text);
    if (!n) {
      return bad(n.error());
    }
    if (n->op != "delete") {
      return std::optional<BfdPeerState>();
    }
    auto key = sessionKey(n->body);
    if (!key) {
      return bad(key.error());
    }
    return std::optional<BfdPeerState>(std::move(*key));
  } catch (const std::exception& e) {
    return bad(std::string("bad notification: ") + e.what());
  }
}

// The client.

BfdControlClient::BfdControlClient(std::string socket_path, OnChange on_change,
                                   std::function<void()> on_disconnect)
    : path_(std::move(socket_path)),
      on_change_(std::move(on_change)),
      on_disconnect_(std::move(on_disconnect)) {}

BfdControlClient::~BfdControlClient() {
  drain_.reset();
  io_.reset();
  retry_timer_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void BfdControlClient::attach(core::EventLoop& loop, std::chrono::milliseconds retry) {
  loop_ = &loop;
  retry_ = std::max(retry, std::chrono::milliseconds(1));
  connectNow();
}

void BfdControlClient::setPaused(bool paused) {
  paused_ = paused;
  if (io_) {
    io_.setEnabled(!paused);
  }
  if (paused) {
    drain_.reset();
    return;
  }
  if (retry_due_) {
    retry_due_ = false;
    connectNow();
  }
  // Messages read before the pause: on a later iteration, not inside the
  // caller's setPaused().
  if (fd_ >= 0 && loop_ != nullptr) {
    drain_ = loop_->defer("bfd-control-drain", [this] { drain(); });
  }
}

void BfdControlClient::scheduleRetry() {
  if (loop_ == nullptr) {
    return;
  }
  retry_timer_ = loop_->after(retry_, "bfd-control-retry", [this] {
    retry_timer_.reset();
    if (paused_) {
      retry_due_ = true;
      return;
    }
    connectNow();
  });
}

void BfdControlClient::connectNow() {
  if (fd_ >= 0 || loop_ == nullptr) {
    return;
  }
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path_.empty() || path_.size() >= sizeof sun.sun_path) {
    // No retry can change this.
    fail("socket path \"" + path_ + "\" is empty or too long");
    return;
  }
  std::memcpy(sun.sun_path, path_.data(), path_.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(std::string("socket: ") + std::strerror(errno));
    return;
  }
  // A Unix stream connect completes at once or fails (EAGAIN when bfdd's
  // backlog is full): it never leaves us waiting in EINPROGRESS.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sun), sizeof sun) != 0) {
    const int err = errno;
    ::close(fd);
    fail("connect " + path_ + ": " + std::strerror(err));
    return;
  }
  // bfdd reads the header with one read() of 8 bytes and the payload after
  // it, so the request goes in one send; a new socket's buffer takes it.
  request_id_ = next_id_++;
  if (next_id_ == 0) {
    next_id_ = 1;  // 0 is bfdd's id for notifications
  }
  const auto request = encodeNotifyRequest(request_id_, kBfdNotifyPeerState | kBfdNotifyConfig);
  const ssize_t n = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(request.size())) {
    const int err = n < 0 ? errno : EAGAIN;
    ::close(fd);
    fail("send NOTIFY request to " + path_ + ": " + std::strerror(err));
    return;
  }
  fd_ = fd;
  decoder_.reset();
  io_ = loop_->onIo(fd_, EPOLLIN, "bfd-control", [this](uint32_t events) { onReadable(events); });
  if (paused_) {
    io_.setEnabled(false);
  }
}

void BfdControlClient::onReadable(uint32_t events) {
  read_buf_.resize(kBfdMaxPayload + kBfdHeaderSize);
  // One read per dispatch (the source is level-triggered): a burst of
  // notifications does not hold the loop.
  const ssize_t n = ::read(fd_, read_buf_.data(), read_buf_.size());
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    if (events & (EPOLLHUP | EPOLLERR)) {
      fail("bfdd's control socket hung up");
    }
    return;
  }
  if (n <= 0) {
    fail(n == 0 ? std::string("bfdd closed its control socket")
                : std::string("read: ") + std::strerror(errno));
    return;
  }
  decoder_.feed(std::span<const uint8_t>(read_buf_.data(), static_cast<size_t>(n)));
  drain();
}

void BfdControlClient::drain() {
  // A callback may pause the client: what is left waits in the decoder.
  while (fd_ >= 0 && !paused_) {
    auto m = decoder_.next();
    if (!m) {
      break;
    }
    if (!*m) {
      fail("bfdd's stream is unusable: " + m->error());
      return;
    }
    handle(m->value());
  }
}

void BfdControlClient::handle(const BfdControlDecoder::Message& m) {
  if (m.type == kBfdMsgResponse) {
    // {"status":"ok"} or {"status":"error","error":"..."}.
    json o = json::parse(m.json, nullptr, false);
    const bool ok = o.is_object() && o.contains("status") && o["status"].is_string() &&
                    o["status"].get_ref<const std::string&>() == "ok";
    if (m.id != request_id_ || !ok) {
      fail("bfdd refused the NOTIFY request (id " + std::to_string(m.id) +
           "): " + text::escape(m.json, 200));
      return;
    }
    subscribed_ = true;
    outage_logged_ = false;
    last_error_.clear();
    spdlog::info("bfd: subscribed to bfdd's session state at {}", path_);
    return;
  }
  if (m.type != kBfdMsgNotify) {
    spdlog::debug("bfd: ignored bfdd message type {}", m.type);
    return;
  }
  auto status = parseBfdNotify(m.json);
  if (!status) {
    last_error_ = "bad notification from bfdd: " + text::escape(status.error(), 300);
    spdlog::warn("bfd: {}", last_error_);
    return;
  }
  if (*status) {
    apply(**status);
    return;
  }
  auto deleted = parseBfdDelete(m.json);
  if (!deleted) {
    last_error_ = "bad notification from bfdd: " + text::escape(deleted.error(), 300);
    spdlog::warn("bfd: {}", last_error_);
    return;
  }
  if (*deleted) {
    drop(**deleted);
  }
  // "add" / "update": timers and flags, not state.
}

void BfdControlClient::apply(const BfdPeerState& s) {
  auto it = std::find_if(states_.begin(), states_.end(),
                         [&](const BfdPeerState& o) { return o.sameSession(s); });
  const std::string what = s.peer.toString() + (s.multihop ? " (multihop" : " (single hop") +
                           (s.interface.empty() ? "" : ", " + s.interface) + ")";
  if (it == states_.end()) {
    spdlog::info("bfd: session to {} is {}", what, toString(s.state));
    states_.push_back(s);
  } else {
    if (it->state != s.state) {
      spdlog::info("bfd: session to {} {} -> {}", what, toString(it->state), toString(s.state));
    }
    *it = s;
  }
  if (on_change_) {
    on_change_(s);
  }
}

void BfdControlClient::drop(const BfdPeerState& key) {
  auto it = std::find_if(states_.begin(), states_.end(),
                         [&](const BfdPeerState& o) { return o.sameSession(key); });
  if (it != states_.end()) {
    states_.erase(it);
  }
  spdlog::info("bfd: bfdd deleted the session to {}", key.peer.toString());
  BfdPeerState gone = key;
  gone.state = BfdPeerState::State::kUnknown;
  if (on_change_) {
    on_change_(gone);
  }
}

void BfdControlClient::fail(std::string why) {
  const bool was_up = subscribed_;
  io_.reset();
  drain_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  decoder_.reset();
  subscribed_ = false;
  states_.clear();
  last_error_ = std::move(why);
  // One line per outage: the retry runs every period while bfdd is away.
  if (was_up || !outage_logged_) {
    spdlog::warn("bfd: {} (retrying every {} ms)", last_error_, retry_.count());
    outage_logged_ = true;
  }
  scheduleRetry();
  if (was_up && on_disconnect_) {
    on_disconnect_();
  }
}

}  // namespace mcgw::frr
