#include "control/daemon/gateway.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "config/text.hpp"
#include "control/api/protocol.hpp"
#include "dataplane/proto/udp.hpp"

#include <fcntl.h>
#include <linux/neighbour.h>
#include <net/if.h>
#include <spawn.h>
#include <sys/wait.h>

namespace mcgw::daemon {

using nlohmann::json;

Result<LoadedConfig, config::ConfigErrors> loadConfig(const std::string& path) {
  auto text = config::readConfigFile(path);
  if (!text) {
    return unexpected(text.error());
  }
  auto loaded = config::loadConfigText(*text, path);
  if (!loaded) {
    return unexpected(loaded.error());
  }
  return LoadedConfig{*loaded, std::move(*text)};
}

std::string isoTime(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// The af_xdp PMD loads mcgw's XDP program unless the operator named one.
std::string extraDevargs(const config::PortConfig& pc) {
  if (pc.vdev.rfind("net_af_xdp", 0) == 0 && pc.vdev.find("xdp_prog=") == std::string::npos) {
    return ",xdp_prog=" + ebpf::defaultXdpObjectPath();
  }
  return "";
}

std::vector<std::string> errorLines(const config::ConfigErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) {
    out.push_back(e.toString());
  }
  return out;
}

// Port changes that need the device reopened rather than adjusted.
bool needsReopen(const config::PortConfig& a, const config::PortConfig& b) {
  return a.pci != b.pci || a.vdev != b.vdev || a.rx_queues != b.rx_queues ||
         a.rx_descriptors != b.rx_descriptors || a.tx_descriptors != b.tx_descriptors;
}

}  // namespace

Result<std::unique_ptr<Gateway>, std::vector<std::string>> Gateway::start(
    const std::string& path, LoadedConfig loaded, const std::string& program,
    StartOptions options) {
  const std::string log_level = options.log_level_override.empty() ? loaded.config->logging.level
                                                                   : options.log_level_override;
  std::unique_ptr<Gateway> gw(new Gateway());
  gw->path_ = path;
  gw->log_level_override_ = options.log_level_override;
  gw->last_good_ = std::make_unique<LastGoodStore>(options.state_dir, path);
  gw->fallback_ = std::move(options.fallback);
  gw->config_ = std::move(loaded.config);
  gw->config_text_ = std::move(loaded.text);
  gw->started_at_ = gw->loaded_at_ = std::chrono::system_clock::now();
  gw->started_ = std::chrono::steady_clock::now();

  auto eal = engine::Eal::init(*gw->config_, program, log_level);
  if (!eal) {
    return unexpected(std::vector<std::string>{eal.error()});
  }
  gw->eal_ = std::move(*eal);
  auto dp = engine::Dataplane::start(gw->config_->eal.workers, gw->eal_->mempool());
  if (!dp) {
    return unexpected(std::vector<std::string>{dp.error()});
  }
  gw->dataplane_ = std::move(*dp);
  for (const auto& pc : gw->config_->ports) {
    auto port = engine::Port::open(pc, gw->eal_->mempool(), gw->txQueues(), extraDevargs(pc));
    if (!port) {
      return unexpected(std::vector<std::string>{port.error()});
    }
    spdlog::info("port {}: {} opened as DPDK port {} ({})", pc.name,
                 pc.pci.empty() ? pc.vdev : pc.pci, (*port)->id(), config::toString(pc.role));
    gw->ports_.push_back(std::move(*port));
  }
  auto monitor = kernel::NeighborMonitor::open();
  if (!monitor) {
    return unexpected(std::vector<std::string>{"kernel neighbour table: " + monitor.error()});
  }
  gw->neighbors_ = std::move(*monitor);
  gw->pmtu_ = std::make_unique<pmtu::PathMtuService>();
  gw->setUpKernelSides();
  gw->keepNextHopsResolved();
  if (auto r = gw->publish(*gw->config_, gw->openPorts()); !r) {
    return unexpected(std::vector<std::string>{r.error()});
  }
  gw->tick();
  spdlog::info("fast path: {} worker(s), {} tunnel(s), {} line(s)", gw->dataplane_->workers(),
               gw->dataplane_->tables()->tunnels.size(), gw->dataplane_->tables()->lines.size());
  return gw;
}

Gateway::~Gateway() {
  dataplane_.reset();  // workers stop before their ports close
  builder_.clear();    // the FIBs and the neighbour table, before the EAL goes
  kernel_.clear();     // TAPs
  ports_.clear();      // before the EAL goes
  eal_.reset();
  for (const auto& set : {managed_own_, host_managed_}) {
    for (const auto& [ifindex, address] : set) {
      if (auto r = kernel::rtnl::deleteNeighbor(ifindex, address); !r) {
        spdlog::warn("{}", r.error());
      }
    }
  }
}

namespace {

bool isAfXdp(const config::PortConfig& pc) {
  return pc.vdev.rfind("net_af_xdp", 0) == 0;
}
bool needsTap(const config::PortConfig& pc) {
  return !pc.pci.empty() || pc.vdev.rfind("net_af_packet", 0) == 0;
}

void writeSysctl(const std::string& path, const char* value) {
  std::ofstream f(path);
  f << value;
  if (!f) {
    spdlog::warn("cannot set {} to {}", path, value);
  }
}

// Runs a command (no shell), quietly; true when it exits 0.  Used for tc,
// which has no small library; it runs once per port at start.
bool run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A port's device counters, as status and show counters list them.
json portCounters(const engine::PortStatus& s) {
  return {{"rx_packets", s.rx_packets}, {"tx_packets", s.tx_packets}, {"rx_bytes", s.rx_bytes},
          {"tx_bytes", s.tx_bytes},     {"rx_missed", s.rx_missed},   {"rx_errors", s.rx_errors},
          {"tx_errors", s.tx_errors},   {"rx_nombuf", s.rx_nombuf}};
}

std::string macText(const uint8_t* m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

}  // namespace

// Gives every running port without one its kernel side: af_xdp ports use
// their own interface; af_packet and PCI ports get a TAP with the port's MAC.
// The interface gets the port's addresses.  Failures are logged and shown in
// health; forwarding works without the kernel side, the control plane not.
void Gateway::setUpKernelSides() {
  kernel_errors_.clear();
  for (const auto& p : ports_) {
    const config::PortConfig& pc = p->config();
    if (auto k = kernel_.find(pc.name); k != kernel_.end()) {
      // An existing kernel side gets the port's current addresses (a
      // reload may have added some; removed ones stay until a restart).
      for (const auto& a : pc.addresses) {
        if (auto r = kernel::rtnl::addAddress(k->second.ifindex, a); !r) {
          spdlog::warn("port {}: {}: {}", pc.name, k->second.ifname, r.error());
        }
      }
      continue;
    }
    KernelSide side;
    if (isAfXdp(pc)) {
      side.ifname = pc.kernelInterface();
      auto maps = ebpf::XdpMaps::attachToInterface(side.ifname);
      if (maps) {
        side.xdp.emplace(std::move(*maps));
      } else {
        kernel_errors_.push_back("port " + pc.name + ": the XDP program on " + side.ifname +
                                 " is not mcgw's (" + maps.error() +
                                 "): the kernel may not see its control traffic");
        spdlog::warn("{}", kernel_errors_.back());
      }
    } else if (needsTap(pc)) {
      // mcgw-<port>, or, when that is too long or taken, mcgw-<start>-<n>.
      side.ifname = "mcgw-" + pc.name;
      if (side.ifname.size() >= IFNAMSIZ || if_nametoindex(side.ifname.c_str()) != 0) {
        side.ifname = "mcgw-" + pc.name.substr(0, 6) + "-" + std::to_string(tap_serial_);
      }
      config::PortConfig tc;
      tc.name = pc.name + "-kernel";
      tc.role = pc.role;
      tc.vdev = "net_tap" + std::to_string(tap_serial_++) + ",iface=" + side.ifname +
                ",mac=" + macText(p->mac().data());
      tc.mtu = pc.mtu;
      tc.rx_queues = txQueues();  // the kernel spreads its packets over the queues
      tc.rx_descriptors = 256;
      tc.tx_descriptors = 256;
      auto tap = engine::Port::open(tc, eal_->mempool(), txQueues());
      if (!tap) {
        kernel_errors_.push_back("port " + pc.name + ": no kernel side: " + tap.error());
        spdlog::error("{}", kernel_errors_.back());
        continue;
      }
      side.tap = std::move(*tap);
      if (const std::string phys = pc.kernelInterface(); !phys.empty()) {
        // The kernel keeps off the af_packet interface: its addresses live on
        // the TAP, so it must neither answer ARP nor speak IPv6 there.
        writeSysctl("/proc/sys/net/ipv4/conf/" + phys + "/arp_ignore", "8");
        writeSysctl("/proc/sys/net/ipv6/conf/" + phys + "/disable_ipv6", "1");
        // Linux accepts IPv4 for a local address on any interface, so the
        // kernel would take each packet to the gateway twice: from this
        // interface and from the TAP.  Packet sockets (af_packet) see frames
        // before tc ingress, so dropping everything there (a one-instruction
        // cls_bpf filter: matchall is not in every kernel) leaves mcgwd its
        // copy and the kernel only the TAP's.
        if (!run({"tc", "qdisc", "replace", "dev", phys, "clsact"}) ||
            !run({"tc", "filter", "replace", "dev", phys, "ingress", "pref", "1", "bpf", "da",
                  "bytecode", "1,6 0 0 2,"})) {  // classic BPF: return TC_ACT_SHOT
          kernel_errors_.push_back("port " + pc.name + ": cannot keep the kernel off " + phys +
                                   " (tc clsact + bpf drop failed): packets to the gateway "
                                   "may reach its kernel twice");
          spdlog::warn("{}", kernel_errors_.back());
        }
      }
    } else {
      continue;  // null, ring, pcap, tap ports: no kernel side
    }
    side.ifindex = static_cast<int>(if_nametoindex(side.ifname.c_str()));
    if (side.ifindex == 0) {
      kernel_errors_.push_back("port " + pc.name + ": kernel interface " + side.ifname +
                               " not found");
      spdlog::error("{}", kernel_errors_.back());
      continue;
    }
    if (side.tap) {
      if (auto r = kernel::rtnl::setLinkUp(side.ifindex, pc.mtu); !r) {
        spdlog::warn("port {}: {}: {}", pc.name, side.ifname, r.error());
      }
    }
    for (const auto& a : pc.addresses) {
      if (auto r = kernel::rtnl::addAddress(side.ifindex, a); !r) {
        kernel_errors_.push_back("port " + pc.name + ": " + side.ifname + ": " + r.error());
        spdlog::error("{}", kernel_errors_.back());
      }
    }
    spdlog::info("port {}: kernel side {} (ifindex {}{})", pc.name, side.ifname, side.ifindex,
                 side.tap   ? ", TAP"
                 : side.xdp ? ", XDP program"
                            : "");
    kernel_[pc.name] = std::move(side);
  }
  updateXdpMaps();
}

// What mcgw's XDP program needs to decide: the port's role, our VTEPs on it
// (overlay traffic to DPDK) and its own addresses with their subnet
// broadcasts (to the kernel).
void Gateway::updateXdpMaps() {
  for (auto& [name, side] : kernel_) {
    const config::PortConfig* pc = config_->findPort(name);
    if (!side.xdp || !pc) {
      continue;
    }
    std::vector<config::IpAddress> vteps, locals;
    for (const auto& peer : config_->peers) {
      for (const auto& l : peer.lines) {
        if (l.port == name && std::find(vteps.begin(), vteps.end(), l.local_vtep) == vteps.end()) {
          vteps.push_back(l.local_vtep);
        }
      }
    }
    for (const auto& a : pc->addresses) {
      locals.push_back(a.address);
      if (a.address.family == config::Family::V4 && a.length < 31) {
        config::IpAddress b = a.network().address;
        const uint32_t host = (a.length == 0 ? 0xffffffffu : (1u << (32 - a.length)) - 1);
        for (int i = 0; i < 4; ++i) {
          b.bytes[static_cast<size_t>(i)] |= static_cast<uint8_t>(host >> (24 - 8 * i));
        }
        locals.push_back(b);
      }
    }
    auto role = side.xdp->setRole(pc->role == config::PortRole::kLan ? ebpf::XdpRole::kLan
                                                                     : ebpf::XdpRole::kWan);
    auto v = side.xdp->setVteps(vteps);
    auto l = side.xdp->setLocalAddresses(locals);
    for (const auto* r : {&role, &v, &l}) {
      if (!*r) {
        spdlog::error("port {}: XDP maps: {}", name, r->error());
      }
    }
  }
}

// The next hops the config names (lines' underlay next hops, static routes'
// LAN next hops) are kept resolved by the kernel (managed neighbour entries).
void Gateway::keepNextHopsResolved() {
  std::set<std::pair<int, config::IpAddress>> want;
  auto ifindexOf = [&](const std::string& port) {
    auto it = kernel_.find(port);
    return it == kernel_.end() ? 0 : it->second.ifindex;
  };
  for (const auto& peer : config_->peers) {
    for (const auto& l : peer.lines) {
      if (int ifx = ifindexOf(l.port)) {
        want.insert({ifx, l.next_hop.value_or(l.remote_vtep)});
      }
    }
  }
  for (const auto& t : config_->tenants) {
    for (const auto& r : t.routes) {
      if (!r.next_hop) {
        continue;
      }
      for (const auto& pc : config_->ports) {
        if (pc.role != config::PortRole::kLan || pc.tenant != t.name) {
          continue;
        }
        for (const auto& a : pc.addresses) {
          if (a.network().contains(*r.next_hop)) {
            if (int ifx = ifindexOf(pc.name)) {
              want.insert({ifx, *r.next_hop});
            }
          }
        }
      }
    }
  }
  managed_ = std::move(want);
  for (auto it = managed_own_.begin(); it != managed_own_.end();) {
    if (!managed_.count(*it)) {  // no longer a next hop: ours to remove
      if (auto r = kernel::rtnl::deleteNeighbor(it->first, it->second); !r) {
        spdlog::warn("{}", r.error());
      }
      it = managed_own_.erase(it);
    } else {
      ++it;
    }
  }
  reassertNeighbors();
}

// Next hops without a kernel entry (new, or flushed by a link flap or an
// operator) are asked for again; host entries that failed are removed, so
// that the next packet for the host asks afresh and the kernel stops
// probing a host that is gone.
void Gateway::reassertNeighbors() {
  if (!neighbors_) {
    return;
  }
  const auto& table = neighbors_->entries();
  for (const auto& e : managed_) {
    if (table.count({e.first, e.second})) {
      continue;
    }
    auto r = kernel::rtnl::addManagedNeighbor(e.first, e.second);
    if (!r) {
      spdlog::warn("{}", r.error());
    } else if (*r) {
      managed_own_.insert(e);
    }
  }
  for (auto it = host_managed_.begin(); it != host_managed_.end();) {
    auto n = table.find({it->first, it->second});
    if (n == table.end() || (n->second.state & NUD_FAILED)) {
      if (n != table.end()) {
        if (auto r = kernel::rtnl::deleteNeighbor(it->first, it->second); !r) {
          spdlog::warn("{}", r.error());
        }
      }
      it = host_managed_.erase(it);
    } else {
      ++it;
    }
  }
}

void Gateway::onNeighborEvents() {
  if (neighbors_ && neighbors_->receive()) {
    reassertNeighbors();
    // A neighbour changes its entry in the fast path's table in place; only
    // a line's next hop (its MAC is in the line's outer headers) needs new
    // tables, which share the FIBs.
    auto ports = openPorts();
    auto lines = builder_.updateNeighbors(
        engine::TablesInput::fromConfig(*config_, ports, dataplane_->workers()),
        [this] { dataplane_->synchronize(); });
    if (!lines) {
      spdlog::error("neighbour change: {}", lines.error());
    }
    if (lines && !*lines) {
      return;
    }
    if (auto r = publish(*config_, ports); !r) {
      spdlog::error("neighbour change: {}", r.error());
    }
  }
}

std::map<std::string, engine::OpenPort> Gateway::openPorts(
    const std::set<std::string>& without) const {
  std::map<std::string, engine::OpenPort> out;
  for (const auto& p : ports_) {
    const std::string& name = p->config().name;
    if (without.count(name)) {
      continue;
    }
    engine::OpenPort op(p->id(), p->mac(), p->rxQueues());
    if (auto k = kernel_.find(name); k != kernel_.end()) {
      if (k->second.tap) {
        op.tap_port_id = k->second.tap->id();
      }
      if (neighbors_) {
        for (const auto& [key, n] : neighbors_->entries()) {
          if (n.ifindex == k->second.ifindex && n.usable()) {
            config::MacAddress mac;
            std::copy(n.mac.begin(), n.mac.end(), mac.bytes.begin());
            op.neighbors.push_back({n.address, mac});
          }
        }
      }
    }
    out[name] = std::move(op);
  }
  return out;
}

Result<bool, std::string> Gateway::publish(const config::Config& c,
                                           const std::map<std::string, engine::OpenPort>& ports) {
  auto tables = builder_.build(engine::TablesInput::fromConfig(c, ports, dataplane_->workers()),
                               [this] { dataplane_->synchronize(); });
  if (!tables) {
    return unexpected(tables.error());
  }
  for (uint16_t slot : builder_.freshLineSlots()) {
    dataplane_->resetLineSlot(slot);
  }
  for (uint16_t slot : builder_.freshTunnelSlots()) {
    dataplane_->resetTunnelSlot(slot);
  }
  configurePathMtu(**tables);
  refreshLiveState(**tables);
  dataplane_->publish(std::move(*tables));
  return true;
}

void Gateway::tick() {
  const engine::ForwardingTables* t = dataplane_->tables();
  if (!t) {
    return;
  }
  // Hosts the workers could not reach: ask the kernel to resolve them, a
  // bounded number per tick and in all (a scan of a LAN subnet from behind a
  // tunnel must not fill the kernel's neighbour table or stall this loop).
  unsigned asked = 0;
  for (const auto& miss : dataplane_->takeMisses()) {
    if (miss.port >= engine::kMaxPorts || !t->ports[miss.port].present) {
      continue;
    }
    auto k = kernel_.find(t->ports[miss.port].name);
    if (k == kernel_.end()) {
      continue;  // no kernel side: the held packets time out (no-neighbor)
    }
    config::IpAddress a;
    a.family = miss.v6 ? config::Family::V6 : config::Family::V4;
    std::copy_n(miss.address, miss.v6 ? 16 : 4, a.bytes.begin());
    std::pair<int, config::IpAddress> key{k->second.ifindex, a};
    if (managed_.count(key) || host_managed_.count(key)) {
      continue;  // already asked; the kernel answers when it can
    }
    if (asked >= kMaxResolutionsPerTick || host_managed_.size() >= kMaxHostResolutions) {
      ++resolutions_refused_;
      continue;
    }
    ++asked;
    if (auto r = kernel::rtnl::addManagedNeighbor(key.first, a); !r) {
      spdlog::warn("{}", r.error());
    } else if (*r) {
      host_managed_.insert(key);
      spdlog::debug("resolving {} on {}", a.toString(), k->second.ifname);
    }
  }
  if (pmtu_) {
    pmtu_->poll(pmtu::Clock::now());
    applyPathMtu(*t);
  }
  if (ticks_++ % 5 == 0) {
    refreshLiveState(*t);
  }
}

// A line is usable when its port is open with link up and the operator has
// not taken it down (BFD joins in later).  Set before tables that add the
// line are published, so the first packets find it up.
void Gateway::refreshLiveState(const engine::ForwardingTables& tables) {
  const engine::ForwardingTables* t = &tables;
  port_link_.clear();
  for (const auto& p : ports_) {
    port_link_[p->id()] = p->status().link_up;
  }
  for (const auto& l : t->lines) {
    auto it = port_link_.find(l.port);
    const bool link = it != port_link_.end() && it->second && t->ports[l.port].present;
    const bool up = link && !admin_down_.count(l.peer + "/" + l.name);
    if (up != dataplane_->lineUp(l.slot)) {
      spdlog::info("line {}/{}: {}", l.peer, l.name, up ? "up" : "down");
    }
    dataplane_->setLineUp(l.slot, up);
    // Path MTU discovery is the source of truth for the lines it tracks;
    // without it, the configured MTU.
    const uint16_t tracked = pmtu_ ? pmtu_->tracker().mtu(l.peer + "/" + l.name) : 0;
    const uint16_t mtu = dataplane_->linePathMtu(l.slot);
    if (tracked != 0 && tracked <= l.mtu) {
      if (mtu != tracked) {
        dataplane_->setLinePathMtu(l.slot, tracked);
      }
    } else if (mtu == 0 || mtu > l.mtu) {
      dataplane_->setLinePathMtu(l.slot, l.mtu);
    }
  }
  refreshMss(tables);
}

// The MSS clamp of each tunnel from its peer's mss-clamp and the current
// path MTU of its lines (the lowest: a flow may move to any of them).
void Gateway::refreshMss(const engine::ForwardingTables& t) {
  for (const auto& tu : t.tunnels) {
    const config::PeerConfig* peer = config_->findPeer(t.peer_names[tu.peer]);
    uint16_t mss4 = 0, mss6 = 0;
    if (peer && peer->mss_clamp.mode != config::MssClamp::Mode::kOff) {
      unsigned inner = 65535;
      for (unsigned i = 0; i < tu.n_lines; ++i) {
        const engine::LineEntry& l = t.lines[tu.lines[i]];
        const unsigned mtu =
            dataplane_->linePathMtu(l.slot) ? dataplane_->linePathMtu(l.slot) : l.mtu;
        // The outer IP packet carries the inner Ethernet header as well:
        // tunnelOverhead's 14 outer Ethernet bytes stand for it (1500 over
        // VXLAN/IPv4: inner IP 1450, MSS 1410).
        const unsigned overhead = proto::tunnelOverhead(l.header.ipv6, l.header.encapsulation);
        inner = std::min(inner, mtu > overhead ? mtu - overhead : 0u);
      }
      unsigned m4 = inner > 40 ? inner - 40 : 0, m6 = inner > 60 ? inner - 60 : 0;
      if (peer->mss_clamp.mode == config::MssClamp::Mode::kFixed) {
        m4 = std::min<unsigned>(m4, peer->mss_clamp.value);
        m6 = std::min<unsigned>(m6, peer->mss_clamp.value - 20u);
      }
      // Never below what every TCP must accept (RFC 9293 / RFC 8200).
      mss4 = static_cast<uint16_t>(std::max(m4, 536u));
      mss6 = static_cast<uint16_t>(std::max(m6, 1220u));
    }
    dataplane_->setTunnelMss(tu.slot, mss4, mss6);
  }
}

// Path MTU discovery tracks the lines of the tables about to be published:
// their VTEP addresses, tunnel port and configured MTU.
void Gateway::configurePathMtu(const engine::ForwardingTables& t) {
  if (!pmtu_) {
    return;
  }
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
  pmtu_->configure(config_->path_mtu, lines, pmtu::Clock::now());
  for (const auto& e : pmtu_->errors()) {
    if (std::find(pmtu_errors_.begin(), pmtu_errors_.end(), e) == pmtu_errors_.end()) {
      spdlog::warn("path MTU: {}", e);
      pmtu_errors_.push_back(e);
    }
  }
}

// Path MTU changes go to the fast path (its too-big check and ICMP to the
// inner sender) and into the tunnels' MSS clamp.
void Gateway::applyPathMtu(const engine::ForwardingTables& t) {
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
      dataplane_->setLinePathMtu(l.slot, mtu);
    }
  }
  refreshMss(t);
}

std::vector<int> Gateway::pathMtuFds() const {
  return pmtu_ ? pmtu_->fds() : std::vector<int>{};
}

void Gateway::onPathMtuReadable(int fd) {
  if (!pmtu_) {
    return;
  }
  const auto now = pmtu::Clock::now();
  pmtu_->onReadable(fd, now);
  pmtu_->poll(now);
  if (const engine::ForwardingTables* t = dataplane_->tables()) {
    applyPathMtu(*t);
  }
}

Result<std::string, std::string> Gateway::setLineAdmin(const std::string& peer,
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
  tick();
  return "line " + key + " administratively " + (up ? "up" : "down");
}

engine::Port* Gateway::findPort(const std::string& name) const {
  for (const auto& p : ports_) {
    if (p->config().name == name) {
      return p.get();
    }
  }
  return nullptr;
}

void Gateway::saveLastGood() {
  if (auto r = last_good_->save(config_text_); !r) {
    if (last_good_error_ != r.error()) {
      spdlog::error("last good config: {}", r.error());
    }
    last_good_error_ = r.error();
  } else {
    if (!last_good_error_.empty()) {
      spdlog::info("last good config: saved to {} again", last_good_->path());
    }
    last_good_error_.clear();
  }
}

ReloadOutcome Gateway::reload() {
  ReloadOutcome out;
  auto finish = [&](ReloadOutcome o) {
    if (o.ok) {
      o.summary = o.changes.empty() ? "no changes"
                                    : "applied " + std::to_string(o.changes.size()) + " change" +
                                          (o.changes.size() == 1 ? "" : "s");
      spdlog::info("reload of {}: {}", path_, o.summary);
    } else {
      o.summary = "refused (" + std::to_string(o.errors.size()) + " error" +
                  (o.errors.size() == 1 ? "" : "s") + "); the running config is unchanged";
      spdlog::error("reload of {} {}:", path_, o.summary);
      for (const auto& e : o.errors) {
        spdlog::error("  {}", e);
      }
    }
    last_reload_ = {true, o.ok, std::chrono::system_clock::now(), o.errors, o.changes};
    return o;
  };

  // Validate.
  auto loaded = loadConfig(path_);
  if (!loaded) {
    out.errors = errorLines(loaded.error());
    return finish(out);
  }
  config::ConfigPtr next = loaded->config;
  auto changes = config::diffConfigs(*config_, *next);
  for (const auto& c : changes) {
    if (c.needs_restart) {
      out.errors.push_back(c.toString() + ": this needs a restart (systemctl restart mcgw)");
    }
  }
  if (!out.errors.empty()) {
    return finish(out);
  }

  // Plan the port changes: which running ports close, which configs open,
  // which ports only change their MTU.
  std::vector<std::string> to_close;
  std::vector<const config::PortConfig*> to_open;
  std::vector<std::pair<engine::Port*, const config::PortConfig*>> in_place;
  for (const auto& c : changes) {
    if (c.section != "port") {
      continue;
    }
    const config::PortConfig* want = next->findPort(c.name);
    if (c.kind != config::ConfigChange::Kind::kAdded) {
      engine::Port* running = findPort(c.name);
      if (c.kind == config::ConfigChange::Kind::kChanged && running &&
          !needsReopen(running->config(), *want)) {
        in_place.emplace_back(running, want);
        continue;
      }
      to_close.push_back(c.name);
    }
    if (want) {
      to_open.push_back(want);
    }
  }
  std::set<std::string> held;  // devices of running ports
  for (const auto& p : ports_) {
    held.insert(p->config().deviceName());
  }

  // Apply as a transaction: every step records how to undo itself, and a
  // failure undoes the steps taken, newest first, so the old config stays in
  // force.  Devices no running port holds are opened before anything is
  // closed; devices of ports that close (renamed, swapped, new queue layout)
  // are reopened after.
  std::vector<std::function<void()>> undo;
  std::map<std::string, std::unique_ptr<engine::Port>> opened;
  auto rollback = [&](const std::string& why) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      (*it)();
    }
    sortPorts(*config_);
    setUpKernelSides();
    keepNextHopsResolved();
    if (auto r = publish(*config_, openPorts()); !r) {
      spdlog::error("reload rollback: {}", r.error());
    }
    out.errors.push_back(why + "; nothing was applied");
    return finish(out);
  };
  auto open = [&](const config::PortConfig& pc) -> std::optional<std::string> {
    auto port = engine::Port::open(pc, eal_->mempool(), txQueues(), extraDevargs(pc));
    if (!port) {
      return port.error();
    }
    opened[pc.name] = std::move(*port);
    undo.push_back([&opened, name = pc.name] { opened.erase(name); });
    return std::nullopt;
  };
  for (const auto* pc : to_open) {
    if (!held.count(pc->deviceName())) {
      if (auto e = open(*pc)) {
        return rollback(*e);
      }
    }
  }
  // Workers stop using the ports that close (RCU) before they close; the
  // other ports forward throughout.
  if (!to_close.empty()) {
    std::set<std::string> closing(to_close.begin(), to_close.end());
    if (auto r = publish(*config_, openPorts(closing)); !r) {
      return rollback(r.error());
    }
  }
  for (const auto& name : to_close) {
    auto it = std::find_if(ports_.begin(), ports_.end(),
                           [&](const auto& p) { return p->config().name == name; });
    if (it == ports_.end()) {
      continue;
    }
    config::PortConfig old = (*it)->config();
    kernel_.erase(name);  // its TAP, if any
    ports_.erase(it);     // stops and closes the device
    undo.push_back([this, old] {
      auto port = engine::Port::open(old, eal_->mempool(), txQueues(), extraDevargs(old));
      if (port) {
        ports_.push_back(std::move(*port));
      } else {
        spdlog::error("reload rollback: {}", port.error());
      }
    });
  }
  for (const auto* pc : to_open) {
    if (held.count(pc->deviceName())) {
      if (auto e = open(*pc)) {
        return rollback(*e);
      }
    }
  }
  for (auto& [port, want] : in_place) {
    config::PortConfig old = port->config();
    if (want->mtu != old.mtu) {
      auto r = port->setMtu(want->mtu);
      if (!r) {
        return rollback(r.error());
      }
      if (!*r) {
        spdlog::warn("port {}: the device keeps its own MTU", want->name);
      }
    }
    port->adoptConfig(*want);
    undo.push_back([port = port, old] {
      if (auto r = port->setMtu(old.mtu); !r) {
        spdlog::error("port {}: cannot restore MTU {}: {}", old.name, old.mtu, r.error());
      }
      port->adoptConfig(old);
    });
  }

  // The new tables over the new ports: the last step that can fail.
  {
    auto ports = openPorts();
    for (const auto& [name, port] : opened) {
      ports[name] = {port->id(), port->mac(), port->rxQueues()};
    }
    auto tables =
        builder_.build(engine::TablesInput::fromConfig(*next, ports, dataplane_->workers()),
                       [this] { dataplane_->synchronize(); });
    if (!tables) {
      return rollback(tables.error());
    }
    // Commit: nothing below can fail.
    for (auto& [name, port] : opened) {
      ports_.push_back(std::move(port));
    }
    sortPorts(*next);
    for (uint16_t slot : builder_.freshLineSlots()) {
      dataplane_->resetLineSlot(slot);
    }
    for (uint16_t slot : builder_.freshTunnelSlots()) {
      dataplane_->resetTunnelSlot(slot);
    }
    config_ = next;
    std::erase_if(admin_down_, [&](const std::string& key) {  // lines that are gone
      const auto slash = key.find('/');
      const config::PeerConfig* p = next->findPeer(key.substr(0, slash));
      return !p || std::none_of(p->lines.begin(), p->lines.end(),
                                [&](const auto& l) { return l.name == key.substr(slash + 1); });
    });
    configurePathMtu(**tables);
    refreshLiveState(**tables);
    dataplane_->publish(std::move(*tables));
    // Kernel sides of new ports (their TAPs join the tables in a second step).
    setUpKernelSides();
    updateXdpMaps();
    keepNextHopsResolved();
    if (auto r = publish(*config_, openPorts()); !r) {
      spdlog::error("reload: {}", r.error());
    }
  }
  if (log_level_override_.empty()) {
    spdlog::set_level(spdlog::level::from_str(next->logging.level));
  }
  for (const auto& c : changes) {
    out.changes.push_back(c.toString());
    spdlog::info("reload: {}", c.toString());
  }
  config_ = next;
  config_text_ = std::move(loaded->text);
  loaded_at_ = std::chrono::system_clock::now();
  if (fallback_) {
    spdlog::warn("reload of {}: the file is valid again; the last good copy is no longer in force",
                 path_);
    fallback_.reset();
  }
  saveLastGood();
  out.ok = true;
  return finish(out);
}

// Ports in the order the config lists them (rollback may have appended).
void Gateway::sortPorts(const config::Config& order) {
  std::vector<std::unique_ptr<engine::Port>> sorted;
  for (const auto& pc : order.ports) {
    for (auto& p : ports_) {
      if (p && p->config().name == pc.name) {
        sorted.push_back(std::move(p));
      }
    }
  }
  ports_ = std::move(sorted);
}

std::vector<std::string> Gateway::healthReasons(
    const std::vector<engine::PortStatus>& ports) const {
  std::vector<std::string> reasons;
  for (const auto& pc : config_->ports) {
    auto it =
        std::find_if(ports.begin(), ports.end(), [&](const auto& s) { return s.name == pc.name; });
    if (it == ports.end()) {
      reasons.push_back("port " + pc.name + " is configured but not open (see the log)");
    } else if (!it->link_up) {
      reasons.push_back("port " + pc.name + " link is down");
    }
  }
  if (const engine::ForwardingTables* t = dataplane_ ? dataplane_->tables() : nullptr) {
    for (size_t pi = 0; pi < t->peer_names.size(); ++pi) {
      std::vector<std::string> why;
      bool usable = false;
      for (const auto& l : t->lines) {
        if (l.peer != t->peer_names[pi]) {
          continue;
        }
        if (dataplane_->lineUp(l.slot) && l.resolved) {
          usable = true;
        } else {
          why.push_back(l.name + ": " +
                        (!l.resolved                                ? "next-hop MAC unknown"
                         : admin_down_.count(l.peer + "/" + l.name) ? "administratively down"
                                                                    : "link down"));
        }
      }
      if (!usable) {
        std::string text = "peer " + t->peer_names[pi] + " has no usable line";
        for (size_t i = 0; i < why.size(); ++i) {
          text += (i ? ", " : " (") + why[i] + (i + 1 == why.size() ? ")" : "");
        }
        reasons.push_back(text);
      }
    }
  }
  for (const auto& e : kernel_errors_) {
    reasons.push_back(e);
  }
  if (fallback_) {
    std::string why = fallback_->file_errors.empty() ? "" : ": " + fallback_->file_errors.front();
    if (fallback_->file_errors.size() > 1) {
      why += " (and " + std::to_string(fallback_->file_errors.size() - 1) +
             " more; mcgwctl status --json)";
    }
    reasons.push_back("running the last good config from " + isoTime(fallback_->saved_at) + "; " +
                      path_ + " is invalid" + why);
  }
  if (last_reload_.attempted && !last_reload_.ok) {
    reasons.push_back("last reload failed at " + isoTime(last_reload_.at) +
                      "; the file on disk is not in force");
  }
  if (!last_good_error_.empty()) {
    reasons.push_back("cannot keep the last good copy of the config: " + last_good_error_);
  }
  return reasons;
}

std::vector<engine::PortStatus> Gateway::portStatus() const {
  std::vector<engine::PortStatus> out;
  for (const auto& p : ports_) {
    out.push_back(p->status());
  }
  return out;
}

bool Gateway::healthy() const {
  return healthReasons(portStatus()).empty();
}

std::string Gateway::summary() const {
  auto ports = portStatus();
  size_t up = std::count_if(ports.begin(), ports.end(), [](const auto& s) { return s.link_up; });
  return std::string(healthReasons(ports).empty() ? "healthy" : "degraded") + ": " +
         std::to_string(ports.size()) + " ports (" + std::to_string(up) + " up), config " +
         config_->checksum.substr(0, 12);
}

json Gateway::status() const {
  auto statuses = portStatus();
  auto reasons = healthReasons(statuses);
  json ports = json::array();
  for (size_t i = 0; i < ports_.size(); ++i) {
    const auto& p = ports_[i];
    const engine::PortStatus& s = statuses[i];
    ports.push_back(
        {{"name", s.name},
         {"role", config::toString(p->config().role)},
         {"device", s.device},
         {"driver", s.driver},
         {"port_id", s.port_id},
         {"link",
          {{"up", s.link_up}, {"speed_mbps", s.speed_mbps}, {"full_duplex", s.full_duplex}}},
         {"mtu", s.mtu},
         {"configured_mtu", p->config().mtu},
         {"mac", s.mac},
         {"rx_queues", s.rx_queues},
         {"counters", portCounters(s)}});
  }
  json last = nullptr;
  if (last_reload_.attempted) {
    last = {{"at", isoTime(last_reload_.at)},
            {"ok", last_reload_.ok},
            {"errors", last_reload_.errors},
            {"changes", last_reload_.changes}};
  }
  auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count();
  auto saved = last_good_->savedAt();
  json last_good = {{"file", last_good_->path()},
                    {"saved_at", saved ? json(isoTime(*saved)) : json(nullptr)},
                    {"error", last_good_error_.empty() ? json(nullptr) : json(last_good_error_)}};
  json fallback = nullptr;
  if (fallback_) {
    fallback = {{"copy", fallback_->copy},
                {"saved_at", isoTime(fallback_->saved_at)},
                {"file_errors", fallback_->file_errors}};
  }
  return {{"schema", api::kStatusSchema},
          {"health", {{"state", reasons.empty() ? "healthy" : "degraded"}, {"reasons", reasons}}},
          {"node", {{"name", config_->node.name}, {"site", config_->node.site}}},
          {"daemon",
           {{"version", MCGW_VERSION},
            {"pid", ::getpid()},
            {"started_at", isoTime(started_at_)},
            {"uptime_s", uptime}}},
          {"config",
           {{"file", path_},
            {"checksum", config_->checksum},
            {"loaded_at", isoTime(loaded_at_)},
            {"last_reload", last},
            {"last_good", last_good},
            {"running_last_good", fallback}}},
          {"ports", ports},
          {"fast_path", fastPathStatus()},
          {"path_mtu", pathMtuStatus()}};
}

namespace {

const char* stateName(engine::WorkerState s) {
  switch (s) {
    case engine::WorkerState::kPolling:
      return "polling";
    case engine::WorkerState::kPausing:
      return "pausing";
    case engine::WorkerState::kSleeping:
      return "sleeping";
    case engine::WorkerState::kStopped:
      return "stopped";
  }
  return "unknown";
}

json pb(const engine::CountersSnapshot::PB& tx, const engine::CountersSnapshot::PB& rx) {
  return {{"tx_packets", tx.packets},
          {"tx_bytes", tx.bytes},
          {"rx_packets", rx.packets},
          {"rx_bytes", rx.bytes}};
}

}  // namespace

json Gateway::fastPathStatus() const {
  const engine::CountersSnapshot c = dataplane_->counters();
  const engine::ForwardingTables* t = dataplane_->tables();
  uint64_t drops = 0;
  for (uint64_t d : c.drops) {
    drops += d;
  }
  json workers = json::array();
  for (const auto& w : c.workers) {
    workers.push_back({{"index", w.index},
                       {"lcore", w.lcore},
                       {"state", stateName(w.state)},
                       {"sleep_us", w.sleep_us},
                       {"rx_packets", w.packets}});
  }
  size_t usable = 0;
  for (const auto& l : t->lines) {
    usable += dataplane_->lineUp(l.slot) && l.resolved;
  }
  return {{"workers", workers},
          {"idle_sleep_max_us", t->idle_sleep_max_us},
          {"tables_generation", t->generation},
          {"tunnels", t->tunnels.size()},
          {"lines", t->lines.size()},
          {"lines_usable", usable},
          {"routes", builder_.routeCount()},
          {"drops_total", drops}};
}

// mcgw's XDP program's verdicts per af_xdp port (only those that occurred).
json Gateway::xdpCounters() const {
  json out = json::object();
  for (const auto& [name, side] : kernel_) {
    if (!side.xdp) {
      continue;
    }
    auto c = side.xdp->counters();
    if (!c) {
      continue;
    }
    json verdicts = json::object();
    for (size_t i = 0; i < ebpf::kXdpVerdictCount; ++i) {
      if ((*c)[i].packets > 0) {
        verdicts[std::string(ebpf::kXdpVerdicts[i].name)] = (*c)[i].packets;
      }
    }
    out[name] = verdicts;
  }
  return out;
}

namespace {

// A steady-clock time as ISO-8601 UTC.
std::string isoTime(pmtu::TimePoint t) {
  return daemon::isoTime(
      std::chrono::system_clock::now() -
      std::chrono::duration_cast<std::chrono::system_clock::duration>(pmtu::Clock::now() - t));
}

int64_t ageSeconds(pmtu::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(pmtu::Clock::now() - t).count();
}

json pathMtuCounters(const pmtu::Counters& c) {
  return {{"icmp_accepted", c.icmp_accepted},
          {"icmp_ignored", c.icmp_ignored},
          {"probes_sent", c.probes_sent},
          {"probes_answered", c.probes_answered},
          {"probes_lost", c.probes_lost},
          {"probes_refused", c.probes_refused},
          {"searches", c.searches}};
}

}  // namespace

json Gateway::pathMtuStatus() const {
  const engine::ForwardingTables* t = dataplane_->tables();
  json lines = json::array();
  for (const auto& l : t->lines) {
    const pmtu::LineView* v = pmtu_ ? pmtu_->tracker().view(l.peer + "/" + l.name) : nullptr;
    const uint16_t mtu = dataplane_->linePathMtu(l.slot) ? dataplane_->linePathMtu(l.slot) : l.mtu;
    json line = {{"peer", l.peer},
                 {"line", l.name},
                 {"configured_mtu", l.mtu},
                 {"path_mtu", mtu},
                 {"path_mtu_source", v ? pmtu::toString(v->source) : "configured"},
                 {"probe", v ? pmtu::toString(v->probe) : "off"}};
    if (v) {
      line["path_mtu_since"] = isoTime(v->since);
      line["path_mtu_age_s"] = ageSeconds(v->since);
    }
    lines.push_back(std::move(line));
  }
  json out = {{"probe", config_->path_mtu.probe},
              {"probe_port", config_->path_mtu.probe_port},
              {"lines", lines}};
  if (pmtu_) {
    const auto& i = pmtu_->listener().counters();
    const auto& p = pmtu_->prober().counters();
    out["icmp"] = {{"received", i.received},
                   {"matched", i.matched},
                   {"not_ours", i.not_ours},
                   {"malformed", i.malformed},
                   {"refused", i.refused}};
    out["probes"] = {{"sent", p.sent},
                     {"send_errors", p.send_errors},
                     {"replies", p.replies},
                     {"replies_unmatched", p.replies_unmatched},
                     {"requests_answered", p.requests_answered},
                     {"requests_refused", p.requests_refused},
                     {"malformed", p.malformed}};
    out["errors"] = pmtu_->errors();
  }
  return out;
}

json Gateway::tunnels() const {
  const engine::ForwardingTables* t = dataplane_->tables();
  const engine::CountersSnapshot c = dataplane_->counters();
  json out = json::array();
  for (const auto& tu : t->tunnels) {
    const config::PeerConfig* peer = config_->findPeer(t->peer_names[tu.peer]);
    json lines = json::array();
    json active = json::array();
    for (unsigned i = 0; i < tu.n_lines; ++i) {
      const engine::LineEntry& l = t->lines[tu.lines[i]];
      const bool up = dataplane_->lineUp(l.slot);
      auto link = port_link_.find(l.port);
      const pmtu::LineView* v = pmtu_ ? pmtu_->tracker().view(l.peer + "/" + l.name) : nullptr;
      const unsigned path_mtu =
          dataplane_->linePathMtu(l.slot) ? dataplane_->linePathMtu(l.slot) : l.mtu;
      const unsigned overhead = proto::tunnelOverhead(l.header.ipv6, l.header.encapsulation);
      const config::LineConfig* lc = nullptr;
      for (const auto& x : peer->lines) {
        if (x.name == l.name) {
          lc = &x;
        }
      }
      json line = {{"name", l.name},
                   {"port", config_->findPort(lc->port) ? lc->port : ""},
                   {"local_vtep", lc->local_vtep.toString()},
                   {"remote_vtep", lc->remote_vtep.toString()},
                   {"next_hop", l.next_hop.toString()},
                   {"next_hop_mac", l.resolved ? macText(l.header.dst_mac) : ""},
                   {"mtu", l.mtu},
                   {"path_mtu", path_mtu},
                   {"path_mtu_source", v ? pmtu::toString(v->source) : "configured"},
                   {"path_mtu_since", v ? json(isoTime(v->since)) : json(nullptr)},
                   {"path_mtu_age_s", v ? json(ageSeconds(v->since)) : json(nullptr)},
                   {"path_mtu_reason", v ? v->reason : "configured"},
                   {"probe", v ? pmtu::toString(v->probe) : "off"},
                   {"path_mtu_counters", pathMtuCounters(v ? v->counters : pmtu::Counters{})},
                   // The largest inner IP packet: the path MTU less the encapsulation
                   // (tunnelOverhead counts the outer Ethernet header, the same size
                   // as the inner one, which the path MTU carries).
                   {"inner_mtu", path_mtu > overhead ? path_mtu - overhead : 0},
                   {"mss4", dataplane_->tunnelMss4(tu.slot)},
                   {"mss6", dataplane_->tunnelMss6(tu.slot)},
                   {"up", up && l.resolved},
                   {"admin_up", !admin_down_.count(l.peer + "/" + l.name)},
                   {"link_up", link != port_link_.end() && link->second},
                   {"resolved", l.resolved},
                   {"counters", pb(c.line_tx[l.slot], c.line_rx[l.slot])}};
      if (up && l.resolved && (tu.ecmp || active.empty())) {
        active.push_back(l.name);
      }
      lines.push_back(line);
    }
    out.push_back({{"peer", t->peer_names[tu.peer]},
                   {"tenant", t->tenants[tu.tenant].name},
                   {"vni", tu.vni},
                   {"encapsulation", config::toString(peer->encapsulation)},
                   {"line_mode", config::toString(peer->line_mode)},
                   {"inner_mac", macText(tu.inner_dst.data())},
                   {"active_lines", active},
                   {"mss4", dataplane_->tunnelMss4(tu.slot)},
                   {"mss6", dataplane_->tunnelMss6(tu.slot)},
                   {"lines", lines},
                   {"counters", pb(c.tunnel_tx[tu.slot], c.tunnel_rx[tu.slot])}});
  }
  return {{"schema", "mcgw.tunnels/1"}, {"tunnels", out}};
}

// Every candidate route of every source (the RIB), the selected one first.
json Gateway::routes() const {
  const engine::ForwardingTables* t = dataplane_->tables();
  json out = json::array();
  for (const auto& r : builder_.routes()) {
    out.push_back({{"tenant", r.tenant},
                   {"prefix", r.prefix},
                   {"via", r.via},
                   {"source", r.source},
                   {"distance", r.distance},
                   {"selected", r.selected}});
  }
  return {{"schema", "mcgw.routes/1"}, {"generation", t->generation}, {"routes", out}};
}

json Gateway::counters() const {
  const engine::CountersSnapshot c = dataplane_->counters();
  const engine::ForwardingTables* t = dataplane_->tables();
  json drops = json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < engine::kDropReasonCount; ++i) {
    drops[std::string(engine::kDropReasons[i].name)] = c.drops[i];
    total += c.drops[i];
  }
  json workers = json::array();
  for (const auto& w : c.workers) {
    json queues = json::array();
    for (const auto& q : w.queues) {
      queues.push_back(t->ports[q.port].name + ":" + std::to_string(q.queue));
    }
    workers.push_back({{"index", w.index},
                       {"lcore", w.lcore},
                       {"state", stateName(w.state)},
                       {"sleep_us", w.sleep_us},
                       {"idle_sleep_max_us", t->idle_sleep_max_us},
                       {"polls", w.polls},
                       {"busy_polls", w.busy_polls},
                       {"busy_cycles", w.busy_cycles},
                       {"sleeps", w.sleeps},
                       {"rx_packets", w.packets},
                       {"queues", queues}});
  }
  json lines = json::array();
  for (const auto& l : t->lines) {
    lines.push_back({{"peer", l.peer},
                     {"line", l.name},
                     {"up", dataplane_->lineUp(l.slot) && l.resolved},
                     {"counters", pb(c.line_tx[l.slot], c.line_rx[l.slot])}});
  }
  json tunnels = json::array();
  for (const auto& tu : t->tunnels) {
    tunnels.push_back({{"peer", t->peer_names[tu.peer]},
                       {"tenant", t->tenants[tu.tenant].name},
                       {"vni", tu.vni},
                       {"counters", pb(c.tunnel_tx[tu.slot], c.tunnel_rx[tu.slot])}});
  }
  json ports = json::array();
  for (const auto& p : ports_) {
    auto s = p->status();
    json entry = portCounters(s);
    entry["name"] = s.name;
    ports.push_back(std::move(entry));
  }
  return {{"schema", "mcgw.counters/1"},
          {"drops", drops},
          {"drops_total", total},
          {"lan", pb(c.lan_tx, c.lan_rx)},
          {"wan", pb(c.wan_tx, c.wan_rx)},
          {"icmp",
           {{"sent", c.icmp_sent},
            {"time_exceeded", c.icmp_time_exceeded},
            {"frag_needed", c.icmp_frag_needed},
            {"packet_too_big", c.icmp_packet_too_big},
            {"rate_limited", c.icmp_rate_limited},
            {"not_allowed", c.icmp_not_allowed},
            {"suppressed", c.icmp_suppressed}}},
          {"fragmentation", {{"packets", c.fragmented}, {"fragments", c.fragments}}},
          {"mss",
           {{"clamped", c.mss_clamped},
            {"already_below", c.mss_below},
            {"no_option", c.mss_no_option},
            {"inserted", c.mss_inserted},
            {"malformed", c.mss_malformed}}},
          {"kernel",
           {{"to_kernel_packets", c.to_kernel.packets},
            {"to_kernel_bytes", c.to_kernel.bytes},
            {"from_kernel_packets", c.from_kernel.packets},
            {"from_kernel_bytes", c.from_kernel.bytes}}},
          {"neighbors",
           {{"held_packets", c.held},
            {"resolutions_asked", c.neighbor_misses},
            {"host_entries", host_managed_.size()},
            {"resolutions_refused", resolutions_refused_}}},
          {"xdp", xdpCounters()},
          {"ports", ports},
          {"lines", lines},
          {"tunnels", tunnels},
          {"workers", workers}};
}

json Gateway::neighbors() const {
  json out = json::array();
  for (const auto& [name, op] : openPorts()) {
    for (const auto& n : op.neighbors) {
      engine::Mac mac{};
      const bool in_fast_path = dataplane_->tables()->neighbor(
          op.port_id, n.address.family == config::Family::V6, n.address.bytes.data(), &mac);
      out.push_back({{"port", name},
                     {"address", n.address.toString()},
                     {"mac", n.mac.toString()},
                     {"source", "kernel"},
                     {"in_fast_path", in_fast_path}});
    }
    if (const config::PortConfig* pc = config_->findPort(name)) {
      for (const auto& n : pc->neighbors) {
        out.push_back({{"port", name},
                       {"address", n.address.toString()},
                       {"mac", n.mac.toString()},
                       {"source", "config"}});
      }
    }
  }
  json kernel = json::array();
  if (neighbors_) {
    for (const auto& [key, n] : neighbors_->entries()) {
      kernel.push_back({{"ifindex", n.ifindex},
                        {"address", n.address.toString()},
                        {"state", n.state},
                        {"managed", n.managed},
                        {"usable", n.usable()}});
    }
  }
  return {{"schema", "mcgw.neighbors/1"}, {"neighbors", out}, {"kernel_table", kernel}};
}

}  // namespace mcgw::daemon
