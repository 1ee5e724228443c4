#include "control/kernel/kernel_sides.hpp"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "control/kernel/netlink.hpp"
#include "ebpf/tc_ingress_drop.hpp"

namespace mcgw::kernel {

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

std::string macText(const uint8_t* m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

}  // namespace

const KernelSide* KernelSides::find(const std::string& port) const {
  auto it = sides_.find(port);
  return it == sides_.end() ? nullptr : &it->second;
}

int KernelSides::ifindexOf(const std::string& port) const {
  const KernelSide* s = find(port);
  return s ? s->ifindex : 0;
}

// af_xdp ports use their own interface; af_packet and PCI ports get a TAP
// with the port's MAC.  The interface gets the port's addresses.
void KernelSides::setUp() {
  errors_.clear();
  const uint16_t queues = ports_.txQueues();
  for (const auto& p : ports_.all()) {
    const config::PortConfig& pc = p->config();
    if (auto k = sides_.find(pc.name); k != sides_.end()) {
      // An existing kernel side gets the port's current addresses (a
      // reload may have added some; removed ones stay until a restart).
      for (const auto& a : pc.addresses) {
        if (auto r = rtnl::addAddress(k->second.ifindex, a); !r) {
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
        errors_.push_back("port " + pc.name + ": the XDP program on " + side.ifname +
                          " is not mcgw's (" + maps.error() +
                          "): the kernel may not see its control traffic");
        spdlog::warn("{}", errors_.back());
      }
      // The kernel transmits straight to the interface: without the guard,
      // FRR's BFD would go on saying Up for a killed mcgwd.
      side.wan = pc.role == config::PortRole::kWan;
      if (!side.wan) {
        // Accept mode: frames to a virtual MAC for our addresses reach the
        // kernel as the host's (ebpf/README.md, "Accept mode").
        if (auto r = ebpf::attachVirtualMacHost(side.ifname, p->mac()); !r) {
          spdlog::warn("port {}: {}", pc.name, r.error());
        }
      }
      if (auto guard = ebpf::EgressGuard::attach(side.ifname); guard) {
        side.egress_guard = std::move(*guard);
        if (side.wan && !site_reachable_) {
          if (auto r = side.egress_guard->setSiteReachable(false); !r) {
            spdlog::warn("port {}: {}", pc.name, r.error());
          }
        }
      } else {
        errors_.push_back("port " + pc.name + ": no egress guard on " + side.ifname + " (" +
                          guard.error() + "): BFD would outlive a killed mcgwd");
        spdlog::warn("{}", errors_.back());
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
      tc.rx_queues = queues;  // the kernel spreads its packets over the queues
      tc.rx_descriptors = 256;
      tc.tx_descriptors = 256;
      auto tap = engine::Port::open(tc, ports_.pool(), queues);
      if (!tap) {
        errors_.push_back("port " + pc.name + ": no kernel side: " + tap.error());
        spdlog::error("{}", errors_.back());
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
        // before tc ingress, so dropping everything there leaves mcgwd its
        // copy and the kernel only the TAP's.
        // An egress guard an af_xdp port of an earlier config left would
        // drop the routing protocols the TAP sends out of it.
        if (auto r = ebpf::detachEgressGuard(phys); r && *r) {
          spdlog::info("port {}: removed the af_xdp egress guard left on {}", pc.name, phys);
        }
        if (auto r = ebpf::attachIngressDrop(phys); !r) {
          errors_.push_back("port " + pc.name + ": cannot keep the kernel off " + phys + " (" +
                            r.error() + "): packets to the gateway may reach its kernel twice");
          spdlog::warn("{}", errors_.back());
        }
      }
    } else {
      continue;  // null, ring, pcap, tap ports: no kernel side
    }
    side.ifindex = static_cast<int>(if_nametoindex(side.ifname.c_str()));
    if (side.ifindex == 0) {
      errors_.push_back("port " + pc.name + ": kernel interface " + side.ifname + " not found");
      spdlog::error("{}", errors_.back());
      continue;
    }
    if (side.tap) {
      if (auto r = rtnl::setLinkUp(side.ifindex, pc.mtu); !r) {
        spdlog::warn("port {}: {}: {}", pc.name, side.ifname, r.error());
      }
    }
    for (const auto& a : pc.addresses) {
      if (auto r = rtnl::addAddress(side.ifindex, a); !r) {
        errors_.push_back("port " + pc.name + ": " + side.ifname + ": " + r.error());
        spdlog::error("{}", errors_.back());
      }
    }
    // The workers hold packets for at most 1 s while the kernel resolves a
    // neighbour: a lost ARP request or neighbour solicitation (the first
    // after a LAN link comes back) is sent again after 100 ms rather than
    // the kernel's default 1 s.
    writeSysctl("/proc/sys/net/ipv4/neigh/" + side.ifname + "/retrans_time_ms", "100");
    writeSysctl("/proc/sys/net/ipv6/neigh/" + side.ifname + "/retrans_time_ms", "100");
    spdlog::info("port {}: kernel side {} (ifindex {}{})", pc.name, side.ifname, side.ifindex,
                 side.tap   ? ", TAP"
                 : side.xdp ? ", XDP program"
                            : "");
    sides_[pc.name] = std::move(side);
  }
  updateXdpMaps();
}

namespace {

config::InterfaceAddress hostPrefix(const config::IpAddress& a) {
  return {a, static_cast<uint8_t>(a.bits())};
}

int loopback() {
  return static_cast<int>(if_nametoindex("lo"));
}

}  // namespace

void KernelSides::setAcceptedAddresses(const std::vector<config::IpAddress>& addresses) {
  const int lo = loopback();
  if (lo == 0) {
    spdlog::error("vrrp accept mode: no loopback interface");
    return;
  }
  if (!addresses.empty()) {
    if (auto r = rtnl::setLinkUp(lo, 0); !r) {
      spdlog::warn("vrrp accept mode: lo: {}", r.error());
    }
    for (const auto& [port, side] : sides_) {
      const config::PortConfig* pc = config_->findPort(port);
      if (pc && pc->role == config::PortRole::kLan) {
        writeSysctl("/proc/sys/net/ipv4/conf/" + side.ifname + "/arp_ignore", "1");
      }
    }
  }
  for (const auto& a : accepted_) {
    if (std::find(addresses.begin(), addresses.end(), a) == addresses.end()) {
      if (auto r = rtnl::deleteAddress(lo, hostPrefix(a)); !r) {
        spdlog::error("vrrp accept mode: lo: {}", r.error());
      }
    }
  }
  for (const auto& a : addresses) {
    if (auto r = rtnl::addAddress(lo, hostPrefix(a)); !r) {
      spdlog::error("vrrp accept mode: lo: {}", r.error());
    }
  }
  accepted_ = addresses;
  updateXdpMaps();
}

void KernelSides::removeStaleAcceptedAddresses() {
  const int lo = loopback();
  for (const auto& g : config_->vrrp_groups) {
    for (const auto& a : g.virtual_addresses) {
      if (lo != 0) {
        (void)rtnl::deleteAddress(lo, hostPrefix(a));
      }
    }
  }
}

void KernelSides::clear() {
  for (auto& [port, side] : sides_) {
    if (side.egress_guard) {
      side.egress_guard->keepFilter();
    }
  }
  sides_.clear();
}

void KernelSides::setSiteReachable(bool reachable) {
  if (reachable == site_reachable_) {
    return;
  }
  site_reachable_ = reachable;
  size_t guards = 0;
  for (auto& [port, side] : sides_) {
    if (!side.egress_guard || !side.wan) {
      continue;
    }
    ++guards;
    if (auto r = side.egress_guard->setSiteReachable(reachable); !r) {
      spdlog::error("port {}: {}", port, r.error());
    }
  }
  if (reachable) {
    spdlog::info("site LAN reachable again: BFD leaves the af_xdp WAN ports again");
  } else {
    spdlog::info(
        "site LAN unreachable (a VRRP port without link): BFD held on {} af_xdp WAN port(s){}",
        guards,
        guards ? ", so the remote sites stop sending here"
               : " (PCI and af_packet ports do not hold it)");
  }
}

// The port's role, our VTEPs on it (overlay traffic to DPDK) and its own
// addresses with their subnet broadcasts (to the kernel).
void KernelSides::updateXdpMaps() {
  for (auto& [name, side] : sides_) {
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
    if (pc->role == config::PortRole::kLan) {
      locals.insert(locals.end(), accepted_.begin(), accepted_.end());  // accept mode
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
    const engine::Port* port = ports_.find(name);
    auto mac = port ? side.xdp->setMac(port->mac()) : Result<bool, std::string>(true);
    for (const auto* r : {&role, &v, &l, &mac}) {
      if (!*r) {
        spdlog::error("port {}: XDP maps: {}", name, r->error());
      }
    }
  }
}

Result<bool, std::string> KernelSides::prepare(const daemon::ReloadPlan& plan) {
  next_ = plan.next;
  return true;
}

// Kernel sides of new ports (their TAPs join the tables in a second step).
void KernelSides::apply() {
  config_ = std::move(next_);
  setUp();
  updateXdpMaps();
}

}  // namespace mcgw::kernel
