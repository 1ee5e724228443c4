// Checks the YANG model cannot express.  Each names the node it is about, so
// the error points at the line the operator has to change.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

#include "config/loader_detail.hpp"
#include "config/prefix_index.hpp"
#include "config/text.hpp"

namespace mcgw::config {

namespace detail {
namespace {

std::string q(const std::string& s) {
  return quoteName(s);
}

using config::DisjointPrefixes;

class Checker {
 public:
  Checker(const Config& c, const SourceMap& map, ErrorSink& sink) : c_(c), map_(map), sink_(sink) {}

  void run() {
    eal();
    ports();
    tenants();
    peers();
    bgp();
    vrrp();
    plan();
  }

 private:
  void error(const std::string& path, const std::string& msg) { sink_.at(map_, path, msg); }

  // A prefix whose host bits are set is almost always a typo (10.1.0.1/16 for
  // 10.1.0.0/16); libyang would silently mask them.
  void networkPrefix(const std::string& path) {
    Location loc = map_.find(path);
    auto p = IpPrefix::parse(loc.raw);
    if (p && p->hasHostBits()) {
      sink_.at(loc, path,
               "expected a network prefix, found " + text::quote(loc.raw) +
                   " which has host bits set (did you mean '" + p->network().toString() + "'?)");
    }
  }

  static std::string portPath(const std::string& name) {
    return "/mcgw:ports/port" + keyPredicate("name", name);
  }

  // Whether a is on one of the port's subnets (its addresses with their lengths).
  static bool onSubnet(const PortConfig& p, const IpAddress& a) {
    return std::any_of(p.addresses.begin(), p.addresses.end(),
                       [&](const InterfaceAddress& s) { return s.contains(a); });
  }

  // "10.1.0.1/24, fd00::1/64", or "no addresses"; the first few of many.
  static std::string addressList(const PortConfig& p) {
    constexpr size_t kShown = 4;
    std::string all;
    for (size_t i = 0; i < p.addresses.size() && i < kShown; ++i) {
      all += (i ? ", " : "") + p.addresses[i].toString();
    }
    if (p.addresses.size() > kShown) {
      all += ", ... (" + std::to_string(p.addresses.size()) + " in all)";
    }
    return all.empty() ? "no addresses" : all;
  }

  // " (port 'lan0' has 10.1.0.1/24, fd00::1/64)".
  static std::string subnetsOf(const PortConfig& p) {
    return " (port " + q(p.name) + " has " + addressList(p) + ")";
  }

  static const char* familyName(Family f) { return f == Family::V4 ? "IPv4" : "IPv6"; }

  // Why a MAC that is not unicast is not.
  static const char* notUnicast(const MacAddress& m) {
    return (m.bytes[0] & 1) ? "the multicast bit is set" : "it is all zeros";
  }

  std::string tenantNames() const {
    std::vector<std::string> all;
    for (const auto& t : c_.tenants) {
      all.push_back(t.name);
    }
    return joinBounded(all);
  }

  void eal() {
    // Buffers that sit in RX rings from the start: af_xdp keeps 2048 per
    // queue in its fill ring, a PCI device fills its descriptors; other
    // vdevs allocate as they receive.  Too few and a port fails to start
    // with a bare "Invalid argument" (or starves at run time).
    uint64_t in_rings = 0;
    for (const auto& p : c_.ports) {
      if (p.vdev.rfind("net_af_xdp", 0) == 0) {
        in_rings += 2048ull * p.rx_queues;
      } else if (!p.pci.empty()) {
        in_rings += static_cast<uint64_t>(p.rx_descriptors) * p.rx_queues;
      }
    }
    if (in_rings > 0 && c_.eal.mbufs < in_rings + 1024) {
      uint64_t suggest = 1;
      while (suggest - 1 < in_rings + 1024) {
        suggest <<= 1;
      }
      error("/mcgw:eal/mbufs", "eal.mbufs " + std::to_string(c_.eal.mbufs) +
                                   " is too few: the ports' RX rings hold " +
                                   std::to_string(in_rings) +
                                   " (af_xdp keeps 2048 per queue, PCI ports their rx-descriptors)"
                                   " and packets in flight need more; use at least " +
                                   std::to_string(suggest - 1));
    }
    std::set<uint16_t> seen;
    for (uint16_t w : c_.eal.workers) {
      if (w == c_.eal.main_lcore) {
        error("/mcgw:eal/workers" + keyPredicate(".", std::to_string(w)),
              "worker lcore " + std::to_string(w) +
                  " is also the main lcore (main-lcore: " + std::to_string(w) + "); pick another");
      }
    }
  }

  // DPDK 22.11's Ethernet vdev drivers a gateway can use; a typo here would
  // otherwise surface only when mcgwd starts.
  void vdevDriver(const PortConfig& p, const std::string& path) {
    static constexpr std::array<const char*, 10> kDrivers = {
        "net_af_xdp", "net_af_packet", "net_null",  "net_ring",        "net_pcap",
        "net_tap",    "net_memif",     "net_vhost", "net_virtio_user", "net_bonding"};
    std::string name = p.deviceName();
    std::string driver = name.substr(0, name.find_last_not_of("0123456789") + 1);
    std::vector<std::string> known(kDrivers.begin(), kDrivers.end());
    if (std::find(known.begin(), known.end(), driver) == known.end()) {
      error(
          path, "unknown DPDK virtual device driver " + q(driver) + didYouMean(driver, known) +
                    "; known: " + [&] {
                      std::string all;
                      for (const auto& k : known) {
                        all += (all.empty() ? "" : ", ") + k;
                      }
                      return all;
                    }());
    }
    if ((driver == "net_af_xdp" || driver == "net_af_packet") && p.kernelInterface().empty()) {
      error(path, driver + " needs the kernel interface it attaches to: " + text::escape(name) +
                      ",iface=<interface>");
    }
  }

  void ports() {
    std::map<std::string, std::string> devices;  // device name → port
    std::map<IpAddress, std::string> addresses;
    for (const auto& p : c_.ports) {
      std::string path = portPath(p.name);
      std::string dev = p.deviceName();
      if (auto [it, fresh] = devices.emplace(dev, p.name); !fresh) {
        error(path + (p.pci.empty() ? "/vdev" : "/pci"),
              "device " + q(dev) + " is already used by port " + q(it->second) +
                  "; each port needs its own device");
      }
      if (!p.vdev.empty()) {
        vdevDriver(p, path + "/vdev");
      }
      for (const auto& item : map_.items(path + "/addresses")) {
        const std::string& apath = item.path;
        auto parsed = IpPrefix::parse(item.loc.raw);
        if (!parsed) {
          error(apath, "expected an interface address such as 10.1.0.1/24, found " +
                           text::quote(item.loc.raw));
          continue;
        }
        if (!parsed->hasHostBits() && parsed->length < parsed->address.bits() - 1) {
          error(apath, text::quote(item.loc.raw) +
                           " is the subnet itself; give the gateway's own address in it, such as " +
                           IpPrefix{[&] {
                                      IpAddress x = parsed->address;
                                      x.bytes[x.bits() / 8 - 1] |= 1;
                                      return x;
                                    }(),
                                    parsed->length}
                               .toString());
          continue;
        }
        if (auto [it, fresh] = addresses.emplace(parsed->address, p.name); !fresh) {
          error(apath,
                "address " + parsed->address.toString() + " is already on port " + q(it->second));
        }
      }
      portTenant(p, path);
      neighbors(p, path);
    }
  }

  void portTenant(const PortConfig& p, const std::string& path) {
    if (p.role == PortRole::kWan) {
      if (!p.tenant.empty()) {
        error(path + "/tenant", "port " + q(p.name) +
                                    " is a wan port; 'tenant' is for lan ports (a wan port "
                                    "carries the tunnels of every tenant)");
      }
      return;
    }
    // With no tenant at all the port forwards nothing; with one, the loader
    // filled it in.
    if (p.tenant.empty() && c_.tenants.size() > 1) {
      lan_without_tenant_ = true;
      error(path, "lan port " + q(p.name) + " needs a 'tenant': the config has " +
                      std::to_string(c_.tenants.size()) + " tenants (" + tenantNames() +
                      ") and a lan port carries the traffic of one");
    }
  }

  void neighbors(const PortConfig& p, const std::string& path) {
    for (const auto& n : p.neighbors) {
      std::string npath =
          path + "/neighbors/neighbor" + keyPredicate("address", n.address.toString());
      if (!n.mac.isUnicast()) {
        error(npath + "/mac", "neighbor MAC " + n.mac.toString() + " is not a unicast address (" +
                                  notUnicast(n.mac) + "); give the neighbour's own MAC");
      }
      bool own = std::any_of(p.addresses.begin(), p.addresses.end(),
                             [&](const InterfaceAddress& a) { return a.address == n.address; });
      if (own) {
        error(npath + "/address", "neighbor " + n.address.toString() +
                                      " is this gateway's own address on port " + q(p.name));
      } else if (!onSubnet(p, n.address)) {
        error(npath + "/address", "neighbor " + n.address.toString() +
                                      " is not on a subnet of port " + q(p.name) + subnetsOf(p));
      }
    }
  }

  void tenants() {
    std::map<uint32_t, std::string> vnis;
    for (const auto& t : c_.tenants) {
      std::string path = "/mcgw:tenants/tenant" + keyPredicate("name", t.name);
      if (auto [it, fresh] = vnis.emplace(t.vni, t.name); !fresh) {
        error(path + "/vni", "VNI " + std::to_string(t.vni) + " is already used by tenant " +
                                 q(it->second) + "; every tenant needs its own VNI");
      }
      for (const auto& r : t.routes) {
        std::string rpath = path + "/routes/route" + keyPredicate("prefix", r.prefix.toString());
        networkPrefix(rpath + "/prefix");
        if (!r.peer.empty()) {
          const PeerConfig* peer = c_.findPeer(r.peer);
          if (peer && !peer->tenants.empty() &&
              std::find(peer->tenants.begin(), peer->tenants.end(), t.name) ==
                  peer->tenants.end()) {
            error(rpath + "/peer", "peer " + q(r.peer) + " does not carry tenant " + q(t.name) +
                                       " (add it to the peer's tenants)");
          }
        }
        if (r.next_hop && !lan_without_tenant_) {  // else that error comes first
          routeNextHop(t, *r.next_hop, rpath + "/next-hop");
        }
      }
    }
  }

  // A route's next hop must be reachable on a lan port of the route's tenant.
  void routeNextHop(const TenantConfig& t, const IpAddress& nh, const std::string& path) {
    auto of_tenant = [&](const PortConfig& p) {
      return p.role == PortRole::kLan && p.tenant == t.name;
    };
    if (std::any_of(c_.ports.begin(), c_.ports.end(),
                    [&](const PortConfig& p) { return of_tenant(p) && onSubnet(p, nh); })) {
      return;
    }
    // The message only when it is needed (and shown): formatting every
    // address of every lan port for every route took most of a big config's
    // load.
    if (sink_.full()) {
      error(path, "");
      return;
    }
    std::vector<std::string> lans;
    for (const auto& p : c_.ports) {
      if (of_tenant(p)) {
        lans.push_back(p.name + ": " + addressList(p));
      }
    }
    error(path, "next-hop " + nh.toString() + " is not on the subnet of a lan port of tenant " +
                    q(t.name) +
                    (lans.empty() ? " (the tenant has no lan port)"
                                  : " (" + joinBounded(lans, 4, "; ") + ")"));
  }

  void peers() {
    std::map<std::pair<IpAddress, IpAddress>, std::string> tunnels;
    for (const auto& p : c_.peers) {
      std::string path = "/mcgw:peers/peer" + keyPredicate("name", p.name);
      for (const auto& l : p.lines) {
        std::string lpath = path + "/lines/line" + keyPredicate("name", l.name);
        const PortConfig* port = c_.findPort(l.port);
        if (port && port->role != PortRole::kWan) {
          error(lpath + "/port", "line " + q(l.name) + " uses port " + q(l.port) +
                                     " whose role is lan; underlay lines leave through wan ports");
        }
        if (l.local_vtep.family != l.remote_vtep.family) {
          error(lpath + "/remote-vtep", "local-vtep " + l.local_vtep.toString() +
                                            " and remote-vtep " + l.remote_vtep.toString() +
                                            " are of different address families");
        }
        if (port) {
          bool on_port = false;
          for (const auto& a : port->addresses) {
            on_port = on_port || a.address == l.local_vtep;
          }
          if (!on_port) {
            error(lpath + "/local-vtep", "local-vtep " + l.local_vtep.toString() +
                                             " is not an address of port " + q(l.port) +
                                             " (add it to the port's addresses)");
          }
        }
        if (l.next_hop) {
          if (l.next_hop->family != l.remote_vtep.family) {
            error(lpath + "/next-hop", "next-hop " + l.next_hop->toString() + " is " +
                                           familyName(l.next_hop->family) + " but remote-vtep " +
                                           l.remote_vtep.toString() + " is " +
                                           familyName(l.remote_vtep.family));
          } else if (port && !onSubnet(*port, *l.next_hop)) {
            error(lpath + "/next-hop", "next-hop " + l.next_hop->toString() +
                                           " is not on a subnet of port " + q(l.port) +
                                           subnetsOf(*port));
          }
        }
        if (l.mtu > 0 && port && l.mtu > port->mtu) {
          error(lpath + "/mtu", "line MTU " + std::to_string(l.mtu) + " is larger than port " +
                                    q(l.port) + "'s MTU " + std::to_string(port->mtu));
        }
        auto key = std::make_pair(l.local_vtep, l.remote_vtep);
        if (auto [it, fresh] = tunnels.emplace(key, p.name + "/" + l.name); !fresh) {
          error(lpath + "/remote-vtep", "the VTEP pair " + l.local_vtep.toString() + " → " +
                                            l.remote_vtep.toString() + " is already used by line " +
                                            q(it->second));
        }
      }
      if (!p.inner_mac.isUnicast()) {
        error(path + "/inner-mac", "inner-mac " + p.inner_mac.toString() +
                                       " is not a unicast address (" + notUnicast(p.inner_mac) +
                                       "); give the MAC of the peer's VTEP device");
      }
    }
  }

  void bgp() {
    if (!c_.bgp.enabled) {
      return;
    }
    if (c_.bgp.hold_s < 3 * c_.bgp.keepalive_s) {
      error("/mcgw:bgp/timers/hold", "hold time " + std::to_string(c_.bgp.hold_s) +
                                         " s must be at least 3 × keepalive (" +
                                         std::to_string(3 * c_.bgp.keepalive_s) + " s)");
    }
    const std::string asn = std::to_string(c_.bgp.asn);
    // Every line of a peer with an AS number is a BGP session to the peer's
    // VTEP on it (a peer without one, such as a Linux VXLAN VTEP, has no
    // BGP: static routes); FRR knows a neighbour by its address alone.
    std::map<IpAddress, std::string> sessions;
    for (const auto& p : c_.peers) {
      std::string path = "/mcgw:peers/peer" + keyPredicate("name", p.name);
      if (!p.asn) {
        continue;
      }
      if (*p.asn == c_.bgp.asn) {
        error(path + "/asn", "peer " + q(p.name) + " has this site's own AS number " + asn +
                                 " (bgp.asn); sessions to peer sites are eBGP and need the "
                                 "peer's own AS number");
      }
      for (const auto& l : p.lines) {
        std::string lpath = path + "/lines/line" + keyPredicate("name", l.name) + "/remote-vtep";
        if (auto [it, fresh] = sessions.emplace(l.remote_vtep, p.name + "/" + l.name); !fresh) {
          error(lpath, "remote-vtep " + l.remote_vtep.toString() + " is also used by line " +
                           q(it->second) +
                           "; with bgp each line is a BGP session to its remote-vtep, so each "
                           "needs its own");
        }
      }
    }
    for (const auto& n : c_.bgp.neighbors) {
      std::string path =
          "/mcgw:bgp/neighbors/neighbor" + keyPredicate("address", n.address.toString());
      if (n.asn == c_.bgp.asn) {
        error(path + "/asn", "neighbor " + n.address.toString() +
                                 " has this site's own AS number " + asn +
                                 " (bgp.asn); mcgw runs eBGP only: give the neighbour's own AS "
                                 "number");
      }
      if (auto it = sessions.find(n.address); it != sessions.end()) {
        error(path + "/address", "neighbor " + n.address.toString() +
                                     " is also the remote-vtep of line " + q(it->second) +
                                     "; FRR keeps one session per address");
      }
      const PortConfig* port = c_.findPort(n.port);
      if (!port) {
        continue;  // the model has said so
      }
      if (port->role != PortRole::kLan) {
        error(path + "/port", "neighbor " + n.address.toString() + " uses port " + q(n.port) +
                                  " whose role is wan; extra neighbours are routers on a lan "
                                  "port (peer sites are reached through peers[].lines)");
        continue;
      }
      bool own = std::any_of(port->addresses.begin(), port->addresses.end(),
                             [&](const InterfaceAddress& a) { return a.address == n.address; });
      if (own) {
        error(path + "/address", "neighbor " + n.address.toString() +
                                     " is this gateway's own address on port " + q(n.port));
      } else if (!onSubnet(*port, n.address)) {
        error(path + "/address", "neighbor " + n.address.toString() +
                                     " is not on a subnet of port " + q(n.port) + subnetsOf(*port));
      }
    }
  }

  void vrrp() {
    for (const auto& g : c_.vrrp_groups) {
      std::string path = "/mcgw:vrrp/group" + keyPredicate("vrid", std::to_string(g.vrid));
      const PortConfig* port = c_.findPort(g.port);
      if (port && port->role != PortRole::kLan) {
        error(path + "/port", "VRRP runs on lan ports; port " + q(g.port) + " is a wan port");
      }
      if (g.advert_interval_ms % 10 != 0) {
        error(path + "/advert-interval-ms", "the interval is sent in centiseconds; " +
                                                std::to_string(g.advert_interval_ms) +
                                                " ms is not a multiple of 10");
      }
    }
  }

  void plan() {
    const auto& plan = c_.address_plan;
    if (plan.store == AddressPlanConfig::Store::kEtcd && plan.etcd_endpoints.empty()) {
      error("/mcgw:address-plan/store/type", "store type etcd needs at least one endpoint");
    }
    struct Owner {
      IpPrefix prefix;
      std::string what;
    };
    DisjointPrefixes<Owner> owners;
    auto claim = [&](const IpPrefix& p, const std::string& what, const std::string& path) {
      networkPrefix(path);
      if (const Owner* o = owners.overlapping(p)) {
        error(path, p.toString() + " of " + what + " overlaps " + o->prefix.toString() + " of " +
                        o->what +
                        "; the plan must be overlap-free (use a mapped-range for a "
                        "legacy overlap)");
        return;
      }
      owners.add(p, {p, what});
    };
    for (const auto& v : plan.vpcs) {
      std::string path = "/mcgw:address-plan/clouds/cloud" + keyPredicate("name", v.cloud) +
                         "/regions/region" + keyPredicate("name", v.region) + "/vpcs/vpc" +
                         keyPredicate("name", v.name);
      for (const auto& item : map_.items(path + "/prefixes")) {
        if (auto p = IpPrefix::parse(item.loc.raw)) {
          claim(*p, "VPC " + v.cloud + "/" + v.region + "/" + v.name, item.path);
        }
      }
    }
    for (const auto& m : plan.mapped_ranges) {
      std::string path =
          "/mcgw:address-plan/mapped-ranges/mapped-range" + keyPredicate("name", m.name);
      networkPrefix(path + "/real");
      if (m.real.length != m.mapped.length || m.real.address.family != m.mapped.address.family) {
        error(path + "/mapped", "a 1:1 mapping needs ranges of the same family and length; real " +
                                    m.real.toString() + ", mapped " + m.mapped.toString());
        continue;
      }
      claim(m.mapped, "mapped range " + m.name, path + "/mapped");
    }
    DisjointPrefixes<Owner> pools;
    for (const auto& p : plan.pools) {
      std::string path = "/mcgw:address-plan/pools/pool" + keyPredicate("name", p.name);
      for (const auto& item : map_.items(path + "/prefixes")) {
        auto parsed = IpPrefix::parse(item.loc.raw);
        if (!parsed) {
          continue;
        }
        const IpPrefix& pr = *parsed;
        const std::string& ppath = item.path;
        networkPrefix(ppath);
        if (const Owner* o = pools.overlapping(pr)) {
          error(ppath, "pool prefix " + pr.toString() + " overlaps " + o->prefix.toString() +
                           " of " + o->what);
        } else {
          pools.add(pr, {pr, "pool " + p.name});
        }
        if (p.allocation_length > pr.address.bits()) {
          error(path + "/allocation-length",
                "allocation-length /" + std::to_string(p.allocation_length) +
                    " is longer than an " + (pr.address.family == Family::V4 ? "IPv4" : "IPv6") +
                    " address");
        } else if (pr.length > p.allocation_length) {
          error(path + "/allocation-length",
                "allocation-length /" + std::to_string(p.allocation_length) +
                    " is shorter than pool prefix " + pr.toString() + "; it must be at least /" +
                    std::to_string(pr.length));
        }
      }
    }
  }

  const Config& c_;
  const SourceMap& map_;
  ErrorSink& sink_;
  bool lan_without_tenant_ = false;  // a lan port lacks the tenant it must name
};

}  // namespace

void checkSemantics(const Config& config, const SourceMap& map, ErrorSink& sink) {
  Checker(config, map, sink).run();
}

}  // namespace detail
}  // namespace mcgw::config
