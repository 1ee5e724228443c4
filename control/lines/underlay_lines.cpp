#include "control/lines/underlay_lines.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/text.hpp"
#include "control/lines/mss_policy.hpp"
#include "dataplane/proto/udp.hpp"

namespace mcgw::lines {

UnderlayLines::UnderlayLines(engine::Dataplane& dataplane, const ports::PortSet& ports,
                             config::ConfigPtr config)
    : dataplane_(dataplane),
      ports_(ports),
      config_(std::move(config)),
      pmtu_(std::make_unique<pmtu::PathMtuService>()) {
  // The line's port is open with link up.
  addStateInput({"link", [this](const engine::LineEntry& l, const engine::ForwardingTables& t) {
                   auto it = port_link_.find(l.port);
                   return it != port_link_.end() && it->second && t.ports[l.port].present;
                 }});
  // The operator has not taken the line down.
  addStateInput({"admin", [this](const engine::LineEntry& l, const engine::ForwardingTables&) {
                   return !adminDown(l.peer, l.name);
                 }});
}

UnderlayLines::~UnderlayLines() = default;

void UnderlayLines::attach(core::EventLoop& loop) {
  loop_ = &loop;
  pmtu_timer_ = loop.every(kPathMtuPeriod, "path MTU poll", [this] { pollPathMtu(); });
  refresh_timer_ = loop.every(kRefreshPeriod, "line refresh", [this] {
    if (const engine::ForwardingTables* t = dataplane_.tables()) {
      refresh(*t);
    }
  });
  watchPathMtu();
}

void UnderlayLines::setPaused(bool paused) {
  paused_ = paused;
  for (core::Source* s : {&pmtu_timer_, &refresh_timer_}) {
    if (*s) {
      s->setEnabled(!paused);
    }
  }
  if (paused) {
    pmtu_sources_.clear();
  } else {
    watchPathMtu();
  }
}

void UnderlayLines::watchPathMtu() {
  pmtu_sources_.clear();
  if (!loop_ || paused_) {
    return;
  }
  for (int fd : pmtu_->fds()) {
    pmtu_sources_.push_back(loop_->onReadable(fd, "path MTU socket " + std::to_string(fd),
                                              [this, fd] { onPathMtuReadable(fd); }));
  }
}

bool UnderlayLines::linkUp(uint16_t port_id) const {
  auto it = port_link_.find(port_id);
  return it != port_link_.end() && it->second;
}

void UnderlayLines::beforePublish(const engine::ForwardingTables& tables) {
  configurePathMtu(tables);
  refresh(tables);
}

void UnderlayLines::refresh(const engine::ForwardingTables& t) {
  port_link_.clear();
  for (const auto& p : ports_.all()) {
    port_link_[p->id()] = p->status().link_up;
  }
  // Every input first, then SLA steering over the lines they leave up.
  std::vector<SlaLine> judged;
  judged.reserve(t.lines.size());
  for (const auto& l : t.lines) {
    const config::PeerConfig* peer = config_->findPeer(l.peer);
    judged.push_back({l.peer, l.name, peer && peer->sla ? &*peer->sla : nullptr,
                      pmtu_->quality().view(l.peer + "/" + l.name),
                      std::all_of(inputs_.begin(), inputs_.end(),
                                  [&](const LineStateInput& in) { return in.up(l, t); })});
  }
  for (const auto& change : sla_.update(judged, pmtu::Clock::now())) {
    spdlog::warn("{}", change);
  }
  for (size_t i = 0; i < t.lines.size(); ++i) {
    const engine::LineEntry& l = t.lines[i];
    const bool up = judged[i].base_up && sla_.usable(l.peer, l.name);
    if (up != dataplane_.lineUp(l.slot)) {
      spdlog::info("line {}/{}: {}", l.peer, l.name, up ? "up" : "down");
    }
    dataplane_.setLineUp(l.slot, up);
    // Path MTU discovery is the source of truth for the lines it tracks;
    // without it, the configured MTU.
    const uint16_t tracked = pmtu_->tracker().mtu(l.peer + "/" + l.name);
    const uint16_t mtu = dataplane_.linePathMtu(l.slot);
    if (tracked != 0 && tracked <= l.mtu) {
      if (mtu != tracked) {
        dataplane_.setLinePathMtu(l.slot, tracked);
      }
    } else if (mtu == 0 || mtu > l.mtu) {
      dataplane_.setLinePathMtu(l.slot, l.mtu);
    }
  }
  refreshMss(t);
}

// The MSS clamp of each tunnel from its peer's mss-clamp and the current
// path MTU of its lines.
void UnderlayLines::refreshMss(const engine::ForwardingTables& t) {
  for (const auto& tu : t.tunnels) {
    const config::PeerConfig* peer = config_->findPeer(t.peer_names[tu.peer]);
    TunnelMss mss;
    if (peer) {
      std::vector<LinePath> paths;
      for (unsigned i = 0; i < tu.n_lines; ++i) {
        const engine::LineEntry& l = t.lines[tu.lines[i]];
        const uint16_t mtu = dataplane_.linePathMtu(l.slot);
        paths.push_back(
            {mtu ? mtu : l.mtu, l.header.ipv6, l.header.encapsulation, l.encrypted, l.esp_udp});
      }
      mss = deriveMss(peer->mss_clamp, paths);
    }
    dataplane_.setTunnelMss(tu.slot, mss.mss4, mss.mss6);
  }
}

// Path MTU discovery tracks the lines of the tables about to be published:
// their VTEP addresses, tunnel port and configured MTU.
void UnderlayLines::configurePathMtu(const engine::ForwardingTables& t) {
  std::vector<pmtu::ServiceLine> lines;
  for (const auto& l : t.lines) {
    pmtu::ServiceLine sl;
    pmtu::LineAddresses& a = sl.addresses;
    a.key = l.peer + "/" + l.name;
    a.local.family = a.remote.family = l.header.ipv6 ? config::Family::V6 : config::Family::V4;
    std::copy_n(l.header.local, l.header.ipv6 ? 16 : 4, a.local.bytes.begin());
    std::copy_n(l.header.remote, l.header.ipv6 ? 16 : 4, a.remote.bytes.begin());
    a.tunnel_port = l.header.encapsulation == proto::Encapsulation::kGeneve ? proto::kGenevePort
                                                                            : proto::kVxlanPort;
    sl.configured_mtu = l.mtu;
    lines.push_back(std::move(sl));
  }
  // configure() may close sockets (and open others that take their
  // numbers): their sources go first, or epoll could lose track of a new
  // socket.  Paused, there are none to drop; resume registers the new ones.
  pmtu_sources_.clear();
  pmtu_->configure(config_->path_mtu, lines, pmtu::Clock::now());
  watchPathMtu();
  for (const auto& e : pmtu_->errors()) {
    if (std::find(pmtu_errors_.begin(), pmtu_errors_.end(), e) == pmtu_errors_.end()) {
      spdlog::warn("path MTU: {}", e);
      pmtu_errors_.push_back(e);
    }
  }
}

// Path MTU changes go to the fast path (its too-big check and ICMP to the
// inner sender) and into the tunnels' MSS clamp.
void UnderlayLines::applyPathMtu(const engine::ForwardingTables& t) {
  auto changes = pmtu_->takeChanges();
  if (changes.empty()) {
    return;
  }
  for (const auto& c : changes) {
    spdlog::info("line {}: path MTU {} -> {} ({})", c.line, c.from, c.to, c.reason);
  }
  for (const auto& l : t.lines) {
    const uint16_t mtu = pmtu_->tracker().mtu(l.peer + "/" + l.name);
    if (mtu != 0 && mtu <= l.mtu) {
      dataplane_.setLinePathMtu(l.slot, mtu);
    }
  }
  refreshMss(t);
}

void UnderlayLines::pollPathMtu() {
  const engine::ForwardingTables* t = dataplane_.tables();
  if (!t) {
    return;  // no lines yet
  }
  pmtu_->poll(pmtu::Clock::now());
  applyPathMtu(*t);
}

void UnderlayLines::onPathMtuReadable(int fd) {
  const auto now = pmtu::Clock::now();
  pmtu_->onReadable(fd, now);
  pmtu_->poll(now);
  if (const engine::ForwardingTables* t = dataplane_.tables()) {
    applyPathMtu(*t);
  }
}

Result<std::string, std::string> UnderlayLines::setAdmin(const std::string& peer,
                                                         const std::string& line, bool up) {
  const config::PeerConfig* p = config_->findPeer(peer);
  // The names come from an API request: quoted (escaped, cut) when echoed.
  if (!p) {
    return unexpected("no peer " + text::quote(peer));
  }
  if (std::none_of(p->lines.begin(), p->lines.end(),
                   [&](const auto& l) { return l.name == line; })) {
    return unexpected("peer " + peer + " has no line " + text::quote(line));
  }
  const std::string key = peer + "/" + line;
  if (up) {
    admin_down_.erase(key);
  } else {
    admin_down_.insert(key);
  }
  spdlog::info("line {}: administratively {}", key, up ? "up" : "down");
  return "line " + key + " administratively " + (up ? "up" : "down");
}

Result<bool, std::string> UnderlayLines::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  return true;
}

void UnderlayLines::apply() {
  config_ = std::move(next_);
  std::erase_if(admin_down_, [&](const std::string& key) {  // lines that are gone
    const auto slash = key.find('/');
    const config::PeerConfig* p = config_->findPeer(key.substr(0, slash));
    return !p || std::none_of(p->lines.begin(), p->lines.end(),
                              [&](const auto& l) { return l.name == key.substr(slash + 1); });
  });
}

}  // namespace mcgw::lines
