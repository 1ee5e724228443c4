#include "control/vrrp/vrrp_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "config/text.hpp"
#include "control/core/process.hpp"

namespace mcgw::vrrp {

namespace {

proto::IpAddr toProto(const config::IpAddress& a) {
  return proto::IpAddr::fromBytes(a.family == config::Family::V6, a.bytes.data());
}

std::span<const std::byte> asBytes(std::span<const uint8_t> s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

void VrrpService::GroupOutput::sendAdvert(uint8_t priority) {
  s_.sendAdvert(g_, priority);
}
void VrrpService::GroupOutput::announce() {
  s_.announce(g_);
}
void VrrpService::GroupOutput::transitioned(const Transition& t) {
  s_.transitioned(g_, t);
}

VrrpService::VrrpService(config::ConfigPtr config, Hooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)) {}

VrrpService::~VrrpService() {
  // The groups' timers and outputs go before the workers whose done
  // callbacks might look them up (those are dropped with the workers).
  track_timer_.reset();
  groups_.clear();
  ports_.clear();
}

void VrrpService::attach(core::EventLoop& loop) {
  loop_ = &loop;
  notify_worker_ = std::make_unique<core::Worker>(loop, "vrrp-notify");
  active_worker_ = std::make_unique<core::Worker>(loop, "vrrp-active");
  startAll();
  track_timer_ = loop.every(std::chrono::duration_cast<std::chrono::microseconds>(kTrackPeriod),
                            "vrrp track", [this] { track(); });
}

std::unique_ptr<VrrpService::Group> VrrpService::makeGroup(const config::VrrpGroupConfig& c) {
  auto g = std::make_unique<Group>();
  g->cfg = c;
  g->v6 = c.ipv6();
  g->vmac = proto::virtualMac(c.vrid, g->v6);
  for (const auto& a : c.virtual_addresses) {
    g->vips.push_back(toProto(a));
  }
  for (const auto& a : c.unicast_peers) {
    g->peers.push_back(toProto(a));
  }
  g->track_up.assign(c.track.size(), true);
  g->output = std::make_unique<GroupOutput>(*this, *g);
  return g;
}

void VrrpService::startAll() {
  groups_.clear();
  for (const auto& c : config_->vrrp_groups) {
    groups_.push_back(makeGroup(c));
  }
  for (auto& g : groups_) {
    startGroup(*g);
  }
  updateStanding();
}

// Primary address, sockets, link: then the state machine starts (Backup).
void VrrpService::startGroup(Group& g) {
  if (stopped_ || !loop_) {
    return;
  }
  const auto& c = g.cfg;
  if (!g.has_primary) {
    if (c.source_address) {
      g.primary = toProto(*c.source_address);
      g.has_primary = true;
    } else if (g.v6 && c.unicast_peers.empty()) {
      if (auto mac = hooks_.port_mac ? hooks_.port_mac(c.port) : std::nullopt) {
        g.primary = proto::eui64LinkLocal(*mac);
        g.has_primary = true;
      }
    } else if (const config::PortConfig* p = config_->findPort(c.port)) {
      for (const auto& a : p->addresses) {
        if ((a.address.family == config::Family::V6) == g.v6) {
          g.primary = toProto(a.address);
          g.has_primary = true;
          break;
        }
      }
    }
    if (!g.has_primary) {
      g.down_reason = "no source address yet (the port's MAC is not known)";
      return;
    }
  }
  if (!portIo(c.port)) {
    g.down_reason = "no sockets on port " + c.port + "'s kernel side";
    return;
  }
  g.link_up = hooks_.link_up ? hooks_.link_up(c.port) : true;
  if (!g.link_up) {
    g.down_reason = "port " + c.port + " link down";
    return;
  }
  if (!g.sm) {
    Params p;
    p.vrid = c.vrid;
    p.priority = c.priority;
    p.advert_interval_cs = static_cast<uint16_t>(c.advert_interval_ms / 10);
    p.preempt = c.preempt;
    p.preempt_delay = std::chrono::milliseconds(c.preempt_delay_ms);
    p.primary = g.primary;
    g.sm = std::make_unique<StateMachine>(p, *g.output);
  }
  g.down_reason.clear();
  const auto now = std::chrono::steady_clock::now();
  // The effective priority before the first advertisement.
  g.sm->setPriority(now, effectivePriority(g));
  g.sm->start(now, "startup");
  arm(g);
}

VrrpService::PortIo* VrrpService::portIo(const std::string& port) {
  auto& slot = ports_[port];
  if (!slot) {
    slot = std::make_unique<PortIo>();
    slot->port = port;
  }
  PortIo& io = *slot;
  if (io.sockets) {
    return &io;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < io.retry_at || paused_) {
    return nullptr;  // paused: a reload may be replacing the kernel side
  }
  io.retry_at = now + std::chrono::seconds(1);
  io.side = hooks_.kernel_side ? hooks_.kernel_side(port) : KernelSideRef{};
  if (io.side.ifindex == 0) {
    io.error = "port " + port + " has no kernel side";
    return nullptr;
  }
  auto s = PortSockets::open(io.side.ifname, io.side.ifindex);
  if (!s) {
    if (io.error != s.error()) {
      spdlog::error("vrrp: {}", s.error());
    }
    io.error = s.error();
    return nullptr;
  }
  io.sockets = std::move(*s);
  io.error.clear();
  // Hosts resolve an IPv6 virtual address with a Neighbor Solicitation to
  // its solicited-node group (RFC 4861): the interface must let it in.
  for (const auto& g : groups_) {
    if (g->cfg.port != port || !g->v6) {
      continue;
    }
    for (const auto& a : g->vips) {
      const proto::Mac mac{0x33, 0x33, 0xff, a.bytes[13], a.bytes[14], a.bytes[15]};
      if (auto j = io.sockets->joinMulticast(mac); !j) {
        spdlog::warn("vrrp {}: {}", g->cfg.vrid, j.error());
      }
    }
  }
  io.rx =
      loop_->onReadable(io.sockets->packetFd(), "vrrp " + port, [this, &io] { onReadable(io); });
  spdlog::info("vrrp: listening on {} (port {})", io.side.ifname, port);
  return &io;
}

void VrrpService::onReadable(PortIo& io) {
  std::array<uint8_t, kMaxFrame> buf;
  // A bounded number per call, so that one busy port cannot hold the loop.
  for (int i = 0; i < 64 && io.sockets; ++i) {
    auto r = io.sockets->receive(buf);
    if (!r) {
      ++io.read_errors;
      spdlog::warn("vrrp: {}; the sockets are opened again", r.error());
      io.error = r.error();
      io.rx.reset();
      io.sockets.reset();
      io.retry_at = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      return;
    }
    if (!r->has_value()) {
      return;
    }
    const Frame f = **r;
    if (f.outgoing) {
      continue;
    }
    ++io.frames;
    handleFrame(io, std::span<const uint8_t>(buf.data(), f.length));
  }
}

VrrpService::Group* VrrpService::find(const std::string& port, uint8_t vrid, bool v6) {
  for (auto& g : groups_) {
    if (g->cfg.port == port && g->cfg.vrid == vrid && g->v6 == v6) {
      return g.get();
    }
  }
  return nullptr;
}

void VrrpService::handleFrame(PortIo& io, std::span<const uint8_t> frame) {
  const proto::ReceivedFrame f = proto::parseFrame(asBytes(frame));
  const auto now = std::chrono::steady_clock::now();
  if (f.vlan != 0) {
    return;  // another segment's (the socket's filter drops these already)
  }
  switch (f.kind) {
    case proto::FrameKind::kOther:
      return;
    case proto::FrameKind::kMalformed:
      ++io.malformed[std::string(proto::toString(f.error))];
      return;
    case proto::FrameKind::kVrrpAdvert: {
      Group* g = find(io.port, f.advert.vrid, f.advert.v6);
      if (!g) {
        ++io.unknown_vrid;
        return;
      }
      if (g->has_primary && f.src_ip == g->primary) {
        return;  // our own, looped back by the network
      }
      if (f.ttl != proto::kVrrpTtl) {
        ++g->counters.bad_ttl;
        return;
      }
      if (!g->peers.empty() &&
          std::find(g->peers.begin(), g->peers.end(), f.src_ip) == g->peers.end()) {
        ++g->counters.not_a_peer;
        return;
      }
      bool same = f.advert.count == g->vips.size();
      for (size_t i = 0; same && i < f.advert.count; ++i) {
        same = std::find(g->vips.begin(), g->vips.end(), f.advert.address(i)) != g->vips.end();
      }
      if (!same) {
        ++g->counters.address_mismatch;
        if (!g->address_mismatch_logged) {
          g->address_mismatch_logged = true;
          spdlog::warn("vrrp {}: {} advertises other virtual addresses than ours", g->cfg.vrid,
                       proto::toString(f.src_ip));
        }
      }
      if (!g->sm) {
        return;
      }
      // Another router that advertises as Active while we are Active (a
      // split brain heals: it will step down): its announcements may have
      // moved the virtual MAC in the switches and hosts, so ours go out
      // again now rather than at the next announce interval; at most once
      // a second.
      const bool heal = g->sm->state() == State::kActive && f.advert.priority != 0 &&
                        now - g->last_heal_announce > std::chrono::seconds(1);
      g->sm->receive(now, Advert{f.advert.priority, f.advert.interval_cs, f.src_ip});
      arm(*g);
      if (heal && g->sm->state() == State::kActive) {
        g->last_heal_announce = now;
        announce(*g);
      }
      return;
    }
    case proto::FrameKind::kArpRequest:
    case proto::FrameKind::kNeighborSolicit: {
      const bool v6 = f.kind == proto::FrameKind::kNeighborSolicit;
      if (!v6 && f.sender_ip == f.target_ip) {
        return;  // a gratuitous ARP: nothing to answer
      }
      for (auto& g : groups_) {
        if (g->cfg.port != io.port || g->v6 != v6 || !g->sm || g->sm->state() != State::kActive ||
            std::find(g->vips.begin(), g->vips.end(), f.target_ip) == g->vips.end()) {
          continue;
        }
        std::array<std::byte, 128> out;
        const size_t n =
            v6 ? proto::buildSolicitedNa(out, g->vmac, f.target_ip, true, f.src_ip,
                                         f.has_sender_mac ? f.sender_mac : f.src_mac)
               : proto::buildArpReply(out, g->vmac, f.target_ip, f.sender_mac, f.sender_ip);
        if (n > 0 && io.sockets &&
            io.sockets->sendFrame({reinterpret_cast<const uint8_t*>(out.data()), n})) {
          ++(v6 ? g->counters.nd_answered : g->counters.arp_answered);
        } else {
          ++g->counters.send_errors;
        }
      }
      return;
    }
  }
}

void VrrpService::arm(Group& g) {
  g.timer.reset();
  if (!g.sm || !loop_) {
    return;
  }
  const auto deadline = g.sm->nextDeadline();
  if (!deadline) {
    return;
  }
  const auto delay = std::max(std::chrono::steady_clock::duration::zero(),
                              *deadline - std::chrono::steady_clock::now());
  g.timer = loop_->after(std::chrono::duration_cast<std::chrono::microseconds>(delay),
                         "vrrp " + std::to_string(g.cfg.vrid), [this, &g] {
                           g.sm->expire(std::chrono::steady_clock::now());
                           arm(g);
                         });
}

void VrrpService::sendAdvert(Group& g, uint8_t priority) {
  PortIo* io = portIo(g.cfg.port);
  if (!io || !io->sockets) {
    ++g.counters.send_errors;
    return;
  }
  proto::VrrpAdvertisement a;
  a.vrid = g.cfg.vrid;
  a.priority = priority;
  a.interval_cs = static_cast<uint16_t>(g.cfg.advert_interval_ms / 10);
  a.addresses = g.vips;
  std::array<std::byte, proto::advertFrameLength(true, 255)> out;
  if (g.peers.empty()) {
    const size_t n = proto::buildAdvertFrame(out, a, g.primary);
    auto r = n > 0 ? io->sockets->sendFrame({reinterpret_cast<const uint8_t*>(out.data()), n})
                   : Result<bool, std::string>(unexpected(std::string("cannot encode")));
    if (!r) {
      ++g.counters.send_errors;
      spdlog::debug("vrrp {}: {}", g.cfg.vrid, r.error());
    }
    return;
  }
  for (const auto& peer : g.peers) {
    const size_t n = proto::encodeVrrpAdvert(out, a, g.primary, peer);
    auto r = n > 0 ? io->sockets->sendRaw({reinterpret_cast<const uint8_t*>(out.data()), n},
                                          g.primary, peer)
                   : Result<bool, std::string>(unexpected(std::string("cannot encode")));
    if (!r) {
      ++g.counters.send_errors;
      spdlog::debug("vrrp {}: {}", g.cfg.vrid, r.error());
    }
  }
}

void VrrpService::announce(Group& g) {
  PortIo* io = portIo(g.cfg.port);
  for (const auto& vip : g.vips) {
    std::array<std::byte, 128> out;
    const size_t n = g.v6 ? proto::buildUnsolicitedNa(out, g.vmac, g.primary, vip, true)
                          : proto::buildGratuitousArp(out, g.vmac, vip);
    if (n > 0 && io && io->sockets &&
        io->sockets->sendFrame({reinterpret_cast<const uint8_t*>(out.data()), n})) {
      ++g.counters.announcements;
    } else {
      ++g.counters.send_errors;
    }
  }
}

void VrrpService::armAnnounce(Group& g) {
  g.announce_timer.reset();
  if (g.cfg.announce_interval_ms == 0 || !loop_) {
    return;
  }
  g.announce_timer =
      loop_->every(std::chrono::milliseconds(g.cfg.announce_interval_ms),
                   "vrrp " + std::to_string(g.cfg.vrid) + " announce", [this, &g] { announce(g); });
}

void VrrpService::armActiveCommand(Group& g) {
  g.active_timer.reset();
  if (g.cfg.active_command.empty() || g.cfg.active_command_interval_ms == 0 || !loop_) {
    return;
  }
  g.active_timer = loop_->every(
      std::chrono::milliseconds(g.cfg.active_command_interval_ms),
      "vrrp " + std::to_string(g.cfg.vrid) + " active command", [this, &g] {
        runCommand(g, true,
                   {g.cfg.active_command, std::to_string(g.cfg.vrid), "active", "still active"});
      });
}

void VrrpService::transitioned(Group& g, const Transition& t) {
  if (t.to == State::kActive) {
    armAnnounce(g);
    if (!g.cfg.active_command.empty()) {
      runCommand(g, true, {g.cfg.active_command, std::to_string(g.cfg.vrid), "active", t.reason});
      armActiveCommand(g);
    }
  } else if (t.from == State::kActive) {
    g.announce_timer.reset();
    g.active_timer.reset();
  }
  if (t.to == State::kActive || t.from == State::kActive) {
    updateVirtualMacs(g.cfg.port);
    updateAccepted();
  }
  if (!g.cfg.notify.empty()) {
    runCommand(g, false,
               {g.cfg.notify, std::to_string(g.cfg.vrid), std::string(toString(t.from)),
                std::string(toString(t.to)), t.reason});
  }
  updateStanding();
}

void VrrpService::updateVirtualMacs(const std::string& port) {
  if (paused_ || !hooks_.set_virtual_macs) {
    return;  // setPaused(false) sets every port's
  }
  std::vector<proto::Mac> macs;
  for (const auto& g : groups_) {
    if (g->cfg.port == port && g->sm && g->sm->state() == State::kActive) {
      macs.push_back(g->vmac);
    }
  }
  hooks_.set_virtual_macs(port, macs);
}

void VrrpService::updateAccepted(bool even_paused) {
  if ((paused_ && !even_paused) || !hooks_.accepted_addresses) {
    return;  // setPaused(false) sends it
  }
  std::vector<config::IpAddress> accepted;
  for (const auto& g : groups_) {
    if (g->cfg.accept_mode && g->sm && g->sm->state() == State::kActive) {
      accepted.insert(accepted.end(), g->cfg.virtual_addresses.begin(),
                      g->cfg.virtual_addresses.end());
    }
  }
  if (accepted != accepted_) {
    accepted_ = accepted;
    hooks_.accepted_addresses(accepted_);
  }
}

void VrrpService::updateStanding() {
  BgpStanding s;
  for (const auto& g : groups_) {
    if (g->cfg.bgp_backup == config::VrrpBgpBackup::kNone ||
        (g->sm && g->sm->state() == State::kActive)) {
      continue;
    }
    if (g->cfg.bgp_backup == config::VrrpBgpBackup::kWithdraw) {
      s.mode = BgpStanding::Mode::kWithdraw;
    } else if (s.mode != BgpStanding::Mode::kWithdraw) {
      s.mode = BgpStanding::Mode::kPrepend;
    }
    s.prepend = std::max(s.prepend, g->cfg.bgp_prepend);
  }
  if (s.mode == BgpStanding::Mode::kWithdraw) {
    s.prepend = 0;
  }
  if ((standing_sent_ && s == standing_) || paused_) {
    standing_ = s;
    return;
  }
  standing_ = s;
  standing_sent_ = true;
  if (hooks_.bgp_standing) {
    hooks_.bgp_standing(s);
  }
}

void VrrpService::runCommand(Group& g, bool active_command, std::vector<std::string> argv) {
  core::Worker* worker = active_command ? active_worker_.get() : notify_worker_.get();
  size_t& queued = active_command ? active_queued_ : notify_queued_;
  if (!worker) {
    return;
  }
  if (stopped_) {
    // The gateway stops (the loop has ended; a queued command would be
    // dropped with the worker): the last transition's notify runs here,
    // bounded, so that a cloud hook hears of it.
    if (active_command) {
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        stop_deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ++g.counters.notify_dropped;
      spdlog::warn("vrrp {}: {} not run: the stop's {} ms for commands are up", g.cfg.vrid, argv[0],
                   kStopNotifyTimeout.count());
      return;
    }
    const auto limit = std::min(std::chrono::milliseconds(g.cfg.notify_timeout_ms), left);
    const auto r = core::runProcess(argv, limit, 64 << 10);
    ++g.counters.notify_run;
    if (r.timed_out) {
      ++g.counters.notify_timed_out;
    } else if (!r.ok()) {
      ++g.counters.notify_failed;
    }
    if (!r.ok()) {
      spdlog::warn("vrrp {}: {} {}", g.cfg.vrid, argv[0], text::escape(r.describe(), 300));
    }
    return;
  }
  if (queued >= kMaxQueuedCommands) {
    ++g.counters.notify_dropped;
    spdlog::warn("vrrp {}: {} not run: {} commands are still waiting", g.cfg.vrid, argv[0], queued);
    return;
  }
  ++queued;
  auto result = std::make_shared<core::ProcessResult>();
  const auto timeout = std::chrono::milliseconds(g.cfg.notify_timeout_ms);
  const std::string port = g.cfg.port;
  const uint8_t vrid = g.cfg.vrid;
  const bool v6 = g.v6;
  worker->run([argv, timeout, result] { *result = core::runProcess(argv, timeout, 64 << 10); },
              [this, result, port, vrid, v6, active_command, argv] {
                size_t& q = active_command ? active_queued_ : notify_queued_;
                --q;
                Group* g = find(port, vrid, v6);
                if (!result->ok()) {
                  spdlog::warn("vrrp {}: {} {}", vrid, argv[0],
                               text::escape(result->describe(), 300));
                }
                if (!g) {
                  return;
                }
                auto& c = g->counters;
                ++(active_command ? c.active_command_run : c.notify_run);
                if (result->timed_out) {
                  ++(active_command ? c.active_command_timed_out : c.notify_timed_out);
                } else if (!result->ok()) {
                  ++(active_command ? c.active_command_failed : c.notify_failed);
                }
              });
}

// The configured priority less the weights of the tracked objects down.
uint8_t VrrpService::effectivePriority(Group& g) {
  int priority = g.cfg.priority;
  for (size_t i = 0; i < g.cfg.track.size(); ++i) {
    const bool up = hooks_.tracked_up ? hooks_.tracked_up(g.cfg.track[i]) : true;
    if (up != g.track_up[i]) {
      g.track_up[i] = up;
      spdlog::warn("vrrp {}: tracked {} is {}", g.cfg.vrid, g.cfg.track[i].object,
                   up ? "up" : "down");
    }
    if (!up) {
      priority -= g.cfg.track[i].weight;
    }
  }
  return static_cast<uint8_t>(std::max(1, priority));
}

void VrrpService::track() {
  if (paused_ || stopped_ || !loop_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  // Each port's link once per tick (a read asks the device and the kernel).
  std::map<std::string, bool> links;
  auto linkUp = [&](const std::string& port) {
    auto [it, fresh] = links.try_emplace(port, true);
    if (fresh && hooks_.link_up) {
      it->second = hooks_.link_up(port);
    }
    return it->second;
  };
  for (auto& gp : groups_) {
    Group& g = *gp;
    if (!g.sm) {
      startGroup(g);  // sockets are tried at most once a second
      continue;
    }
    const bool link = linkUp(g.cfg.port);
    if (link != g.link_up) {
      g.link_up = link;
      const std::string why = "port " + g.cfg.port + (link ? " link up" : " link down");
      if (!link) {
        g.down_reason = why;
        stopGroup(g, why);
        continue;
      }
      g.down_reason.clear();
      g.sm->setPriority(now, effectivePriority(g));
      g.sm->start(now, why);
      arm(g);
      continue;
    }
    const uint8_t effective = effectivePriority(g);
    if (effective != g.sm->priority()) {
      spdlog::info("vrrp {}: priority {} -> {}", g.cfg.vrid, g.sm->priority(), effective);
      g.sm->setPriority(now, effective);
      arm(g);
    }
  }
  // The site is reachable while every port with a group has link.
  bool reachable = true;
  for (const auto& gp : groups_) {
    reachable = reachable && linkUp(gp->cfg.port);
  }
  if (hooks_.site_reachable && reachable != site_reachable_) {
    site_reachable_ = reachable;
    hooks_.site_reachable(reachable);
  }
}

bool VrrpService::siteReachableNow() const {
  return std::none_of(
      config_->vrrp_groups.begin(), config_->vrrp_groups.end(),
      [&](const config::VrrpGroupConfig& c) { return hooks_.link_up && !hooks_.link_up(c.port); });
}

void VrrpService::stopGroup(Group& g, const std::string& why) {
  if (g.sm && g.sm->state() != State::kInitialize) {
    g.sm->shutdown(std::chrono::steady_clock::now(), why);
  }
  g.timer.reset();
  g.announce_timer.reset();
  g.active_timer.reset();
}

void VrrpService::shutdown() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  stop_deadline_ = std::chrono::steady_clock::now() + kStopNotifyTimeout;
  // A notify that runs or waits (a takeover's cloud hook) ends first, so
  // that the stop's own notify is the last one a hook hears.
  if (notify_worker_ && !notify_worker_->waitIdle(stop_deadline_)) {
    spdlog::warn("vrrp: a notify command still runs at the stop");
  }
  track_timer_.reset();
  for (auto& g : groups_) {
    stopGroup(*g, "shutdown");
  }
  std::set<std::string> ports;
  for (const auto& g : groups_) {
    ports.insert(g->cfg.port);
  }
  for (const auto& p : ports) {
    updateVirtualMacs(p);
  }
  updateAccepted(true);  // also when a reload is under way: the process ends
}

void VrrpService::setPaused(bool paused) {
  // The groups' timers and sockets stay live during a reload: a Backup
  // must keep hearing (and an Active keep sending) advertisements, or a
  // reload longer than the Active-down interval would be a failover.
  // What touches the rest of the gateway waits: tracking, the virtual MACs
  // of the ports and BGP's standing.
  if (paused == paused_) {
    return;
  }
  paused_ = paused;
  if (paused) {
    return;
  }
  if (next_config_) {
    config_ = std::move(next_config_);
    reconcile();
  }
  std::set<std::string> ports;
  for (const auto& g : groups_) {
    ports.insert(g->cfg.port);
  }
  for (const auto& p : ports) {
    updateVirtualMacs(p);
  }
  updateAccepted();
  standing_sent_ = false;
  updateStanding();
}

Result<bool, std::string> VrrpService::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  return true;
}

void VrrpService::apply() {
  // Off the loop: the groups are the loop's; they change on resume.
  next_config_ = std::move(next_);
  if (!loop_) {
    config_ = std::move(next_config_);
  }
}

// After a reload, on the loop: groups whose config is unchanged keep their
// state; the others stop (an Active sends priority 0) and start again.
// Every port's sockets are opened again (a reload may have replaced the
// port's kernel side).
void VrrpService::reconcile() {
  auto kept = [&](const Group& g) {
    return std::any_of(config_->vrrp_groups.begin(), config_->vrrp_groups.end(),
                       [&](const config::VrrpGroupConfig& c) { return c == g.cfg; });
  };
  // Every stop first, while groups_ is whole: a stop reports a state change,
  // which looks at all groups (the standing, the virtual MACs).
  for (auto& g : groups_) {
    if (!kept(*g)) {
      stopGroup(*g, "reconfigured");
    }
  }
  std::vector<std::unique_ptr<Group>> keep;
  for (auto& g : groups_) {
    if (kept(*g)) {
      keep.push_back(std::move(g));
    }
  }
  groups_.clear();
  // Sockets are opened again on first use; a port no group uses any more
  // goes (with its last error).
  for (auto it = ports_.begin(); it != ports_.end();) {
    const bool used =
        std::any_of(config_->vrrp_groups.begin(), config_->vrrp_groups.end(),
                    [&](const config::VrrpGroupConfig& c) { return c.port == it->first; });
    if (!used) {
      it = ports_.erase(it);
      continue;
    }
    it->second->rx.reset();
    it->second->sockets.reset();
    it->second->retry_at = {};
    ++it;
  }
  for (const auto& c : config_->vrrp_groups) {
    auto it = std::find_if(keep.begin(), keep.end(),
                           [&](const std::unique_ptr<Group>& g) { return g && g->cfg == c; });
    if (it != keep.end()) {
      groups_.push_back(std::move(*it));
      continue;
    }
    groups_.push_back(makeGroup(c));
  }
  for (auto& g : groups_) {
    if (!g->sm) {
      startGroup(*g);
    } else {
      portIo(g->cfg.port);
    }
  }
}

std::vector<std::string> VrrpService::problems() const {
  std::vector<std::string> out;
  for (const auto& [name, io] : ports_) {
    if (!io->sockets && !io->error.empty()) {
      out.push_back("VRRP on port " + name + ": " + io->error);
    }
  }
  return out;
}

}  // namespace mcgw::vrrp
