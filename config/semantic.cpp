// Checks the YANG model cannot express.  Each names the node it is about, so
// the error points at the line the operator has to change.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <deque>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/loader_detail.hpp"
#include "config/prefix_index.hpp"
#include "config/text.hpp"
#include "config/units.hpp"

namespace mcgw::config {

namespace detail {
namespace {

std::string q(const std::string& s) {
  return quoteName(s);
}

using config::DisjointPrefixes;

class Checker {
 public:
  Checker(const Config& c, const SourceMap& map, ErrorSink& sink, ErrorSink& warnings)
      : c_(c), map_(map), sink_(sink), warn_(warnings) {}

  void run() {
    eal();
    ports();
    tenants();
    peers();
    bgp();
    vrrp();
    plan();
    metrics();
    flowAudit();
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
    // Shaped lines hold packets in their priorities' queues: each worker
    // has each line's queues (a queue per priority its tenants use), and a
    // full queue of every one of them must still leave buffers for the RX
    // rings and the packets in flight, or one busy tenant empties the pool
    // and every port stops receiving.
    const uint64_t workers = std::max<size_t>(1, c_.eal.workers.size());
    uint64_t shaped = 0;
    for (const auto& p : c_.peers) {
      std::set<uint8_t> priorities;
      for (const auto& t : c_.tenants) {
        if (p.tenants.empty() ||
            std::find(p.tenants.begin(), p.tenants.end(), t.name) != p.tenants.end()) {
          priorities.insert(t.bandwidth.priority);
        }
      }
      for (const auto& l : p.lines) {
        if (l.capacity.empty()) {
          continue;
        }
        auto bits = parseRate(l.capacity);
        if (bits && *bits >= kMinCapacityBits && *bits <= kMaxCapacityBits) {
          shaped += workers * priorities.size() * shapeQueuePackets(*bits / workers, l.queue_ms);
        }
      }
    }
    if (shaped > 0 && c_.eal.mbufs < in_rings + 1024 + shaped) {
      uint64_t suggest = 1;
      while (suggest - 1 < in_rings + 1024 + shaped) {
        suggest <<= 1;
      }
      error("/mcgw:eal/mbufs",
            "eal.mbufs " + std::to_string(c_.eal.mbufs) +
                " is too few for the shaped lines: their queues may hold " +
                std::to_string(shaped) +
                " packets (per worker and line, a queue of queue-ms at the capacity for each "
                "priority its tenants use), the RX rings " +
                std::to_string(in_rings) + " and packets in flight need more; use at least " +
                std::to_string(suggest - 1) + ", or lower the lines' queue-ms");
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
      policy(t, path + "/policy");
      bandwidth(t, path + "/bandwidth");
    }
  }

  // A tenant's bandwidth (docs/policy.md): lines that carry the tenant,
  // rates that parse with peak >= committed, windows that do not overlap.
  void bandwidth(const TenantConfig& t, const std::string& path) {
    auto lineRef = [&](const std::string& line, const std::string& at) {
      const auto slash = line.find('/');
      const std::string peer_name = line.substr(0, slash);
      const PeerConfig* peer = c_.findPeer(peer_name);
      if (!peer) {
        error(at, "no peer " + q(peer_name) + " in peers");
        return;
      }
      if (!peer->tenants.empty() &&
          std::find(peer->tenants.begin(), peer->tenants.end(), t.name) == peer->tenants.end()) {
        error(at, "peer " + q(peer_name) + " does not carry tenant " + q(t.name));
        return;
      }
      if (slash != std::string::npos) {
        const std::string name = line.substr(slash + 1);
        if (std::none_of(peer->lines.begin(), peer->lines.end(),
                         [&](const LineConfig& l) { return l.name == name; })) {
          error(at, "peer " + q(peer_name) + " has no line " + q(name));
        }
      }
    };
    auto rates = [&](const MeterRates& r, const std::string& at) {
      auto rate = parseRate(r.rate);
      if (!rate) {
        error(at + "/rate", rate.error());
      }
      if (!r.peak_rate.empty()) {
        auto peak = parseRate(r.peak_rate);
        if (!peak) {
          error(at + "/peak-rate", peak.error());
        } else if (rate && *peak < *rate) {
          error(at + "/peak-rate", "peak-rate " + r.peak_rate + " is below rate " + r.rate);
        }
      }
      for (const auto& [leaf, text] :
           {std::pair{"burst", &r.burst}, {"peak-burst", &r.peak_burst}}) {
        if (text->empty()) {
          continue;
        }
        auto size = parseSize(*text);
        if (!size) {
          error(at + "/" + leaf, size.error());
        } else if (*size < kMinBurstBytes) {
          error(at + "/" + leaf, std::string(leaf) + " " + *text +
                                     " is below one maximum-size frame (" +
                                     std::to_string(kMinBurstBytes) + " bytes)");
        }
      }
    };
    for (const auto& l : t.bandwidth.limits) {
      const std::string at = path + "/limits/limit" + keyPredicate("line", l.line);
      lineRef(l.line, at + "/line");
      rates(l.rates, at);
    }
    for (size_t i = 0; i < t.bandwidth.windows.size(); ++i) {
      const BandwidthWindow& w = t.bandwidth.windows[i];
      const std::string at = path + "/windows/window" + keyPredicate("name", w.name);
      lineRef(w.line, at + "/line");
      rates(w.rates, at);
      if (w.start_minute == w.end_minute) {
        error(at + "/end", "the window is empty: it ends when it starts");
        continue;
      }
      for (size_t j = 0; j < i; ++j) {
        const BandwidthWindow& o = t.bandwidth.windows[j];
        if (o.line == w.line && windowsOverlap(o, w)) {
          error(at, "overlaps window " + q(o.name) + " of " + q(o.line) + " (" +
                        minuteText(o.start_minute) + " to " + minuteText(o.end_minute) + ")");
          break;
        }
      }
    }
  }

  static std::string minuteText(uint16_t m) {
    char b[8];
    std::snprintf(b, sizeof b, "%02u:%02u", m / 60u % 100u, m % 60u);
    return b;
  }

  // Whether two daily windows share a minute (an end before its start runs
  // past midnight).
  static bool windowsOverlap(const BandwidthWindow& a, const BandwidthWindow& b) {
    auto covers = [](const BandwidthWindow& w, unsigned m) {
      return w.start_minute < w.end_minute ? m >= w.start_minute && m < w.end_minute
                                           : m >= w.start_minute || m < w.end_minute;
    };
    for (unsigned m = 0; m < 24 * 60; ++m) {
      if (covers(a, m) && covers(b, m)) {
        return true;
      }
    }
    return false;
  }

  // A tenant's policy rules (docs/policy.md): what the model's patterns
  // leave open.  Every rule has a counter: at most kMaxPolicyRules in all.
  void policy(const TenantConfig& t, const std::string& path) {
    policy_rules_ += t.policy.rules.size();
    if (policy_rules_ > kMaxPolicyRules &&
        policy_rules_ - t.policy.rules.size() <= kMaxPolicyRules) {
      error(path, "tenant " + q(t.name) + " brings the policy rules of all tenants to " +
                      std::to_string(policy_rules_) + "; at most " +
                      std::to_string(kMaxPolicyRules) + " are allowed");
    }
    for (const auto& r : t.policy.rules) {
      const std::string rpath = path + "/rules/rule" + keyPredicate("name", r.name);
      if (Location loc = map_.find(rpath + "/protocol");
          loc.raw.find_first_not_of("0123456789") == std::string::npos && !loc.raw.empty() &&
          !r.protocol) {
        error(rpath + "/protocol", "protocol " + text::quote(loc.raw) + " is not 0..255");
      }
      const bool ports_apply =
          r.protocol && (*r.protocol == 6 || *r.protocol == 17 || *r.protocol == 132);
      for (const char* leaf : {"source-ports", "destination-ports"}) {
        Location loc = map_.find(rpath + "/" + leaf);
        if (!loc.raw.empty() && loc.raw.find_first_not_of("0123456789-") == std::string::npos) {
          checkPortRange(rpath + "/" + leaf, loc.raw, ports_apply);
        }
      }
      std::array<bool, 2> src_family{}, dst_family{};
      addressFamilies(rpath + "/source", src_family);
      addressFamilies(rpath + "/destination", dst_family);
      if (!r.source.empty() && !r.destination.empty() && !(src_family[0] && dst_family[0]) &&
          !(src_family[1] && dst_family[1])) {
        error(rpath, "rule " + q(r.name) +
                         " can match nothing: its sources and destinations are of different "
                         "address families");
      }
    }
  }

  void checkPortRange(const std::string& path, const std::string& raw, bool ports_apply) {
    const auto dash = raw.find('-');
    for (const std::string& part :
         {raw.substr(0, dash), dash == std::string::npos ? std::string() : raw.substr(dash + 1)}) {
      if (!part.empty() && (part.size() > 5 || std::stoul(part) > 65535)) {
        error(path, "port " + text::quote(part) + " is not 0..65535");
        return;
      }
    }
    const auto [lo, hi] = portRange(raw);
    if (lo > hi) {
      error(path, "port range " + text::quote(raw) + " ends below its start");
    } else if (!ports_apply) {
      error(path, "ports need protocol tcp, udp or sctp (only those have ports)");
    }
  }

  // The families a rule's addresses can match (prefixes: theirs; plan
  // objects: both), and errors for prefixes that are not network prefixes
  // and warnings for plan objects the config's plan does not have.
  void addressFamilies(const std::string& path, std::array<bool, 2>& family) {
    for (const auto& item : map_.items(path)) {
      const std::string& raw = item.loc.raw;
      const auto space = raw.find(' ');
      if (space == std::string::npos) {
        auto p = IpPrefix::parse(raw);
        // A refused prefix still counts for its family (an unparsable one for
        // both): one error each, not a second about the families.
        if (!p) {
          sink_.at(item.loc, item.path,
                   "expected a prefix such as 10.1.0.0/16, found " + text::quote(raw));
          family = {true, true};
        } else {
          if (p->hasHostBits()) {
            sink_.at(item.loc, item.path,
                     "expected a network prefix, found " + text::quote(raw) +
                         " which has host bits set (did you mean '" + p->network().toString() +
                         "'?)");
          }
          family[p->address.family == Family::V6 ? 1 : 0] = true;
        }
        continue;
      }
      family = {true, true};
      const std::string kind = raw.substr(0, space), name = raw.substr(space + 1);
      const auto& vpcs = c_.address_plan.vpcs;
      const bool known = std::any_of(vpcs.begin(), vpcs.end(), [&](const VpcConfig& v) {
        return (kind == "vpc" ? v.name : kind == "site" ? v.site : v.cloud) == name;
      });
      if (!known) {
        warn_.at(item.loc, item.path,
                 kind + " " + q(name) +
                     " has no VPC in the config's address plan: the rule matches it only once the "
                     "plan in force (its store) has one");
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
      if (p.sla && !p.sla->max_loss && !p.sla->max_rtt_ms && !p.sla->max_jitter_ms) {
        error(path + "/sla", "sla of peer " + q(p.name) +
                                 " sets no limit: give max-loss, max-rtt-ms or max-jitter-ms");
      }
      // SLA steering judges a 10 s window of at least 20 probes.
      const uint32_t interval = c_.path_mtu.quality_interval_ms;
      if (p.sla && (interval == 0 || interval > 500)) {
        error(path + "/sla", "sla of peer " + q(p.name) +
                                 " needs line quality probes at least every 500 ms "
                                 "(path-mtu.quality-interval-ms is " +
                                 std::to_string(interval) + ")");
      }
      for (const auto& l : p.lines) {
        std::string lpath = path + "/lines/line" + keyPredicate("name", l.name);
        // RFC 3948 is for NATs, which IPv6 underlays do not have; its UDP
        // header would need a checksum there (RFC 8200 8.1).
        if (p.encrypts(l) && p.encryption->udp_encapsulation &&
            l.remote_vtep.family == Family::V6) {
          error(path + "/encryption/udp-encapsulation",
                "udp-encapsulation of peer " + q(p.name) + " is for IPv4 lines; line " + q(l.name) +
                    " is IPv6 (set its encryption to none or use IPv4 VTEPs)");
        }
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
        if (!l.capacity.empty()) {
          if (auto rate = parseRate(l.capacity); !rate) {
            error(lpath + "/capacity", rate.error());
          } else if (*rate < kMinCapacityBits || *rate > kMaxCapacityBits) {
            error(lpath + "/capacity", "capacity " + l.capacity +
                                           " is not within 1M..250G (the lines the shaper serves)");
          }
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
    sites();
  }

  // Peers of one site stand in for each other in the fast path.  A site
  // that names another peer must be that peer's site too, or the two would
  // silently not be gateways of one site.
  void sites() {
    std::map<std::string, size_t> per_site;
    for (const auto& p : c_.peers) {
      const std::string peer_path = "/mcgw:peers/peer" + keyPredicate("name", p.name);
      const std::string path = p.site.empty() ? peer_path : peer_path + "/site";
      if (++per_site[p.siteName()] == kMaxPeersPerSite + 1) {
        error(path, "site " + q(p.siteName()) + " has more than " +
                        std::to_string(kMaxPeersPerSite) + " peers (gateways)");
      }
      if (p.site.empty() || p.site == p.name) {
        continue;
      }
      for (const auto& o : c_.peers) {
        if (o.name == p.site && o.siteName() != p.site) {
          error(path, "site " + q(p.site) + " is the name of peer " + q(o.name) +
                          ", whose site is " + q(o.siteName()) + "; give both the same site");
        }
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

  // The fast path accepts this many virtual MACs per port
  // (engine::kMaxVirtualMacs).
  static constexpr size_t kMaxVrrpGroupsPerPort = 8;

  void vrrp() {
    std::map<std::string, size_t> per_port;
    for (const auto& g : c_.vrrp_groups) {
      std::string path = "/mcgw:vrrp/group" + keyPredicate("vrid", std::to_string(g.vrid));
      const PortConfig* port = c_.findPort(g.port);
      if (port && port->role != PortRole::kLan) {
        error(path + "/port", "VRRP runs on lan ports; port " + q(g.port) + " is a wan port");
      }
      if (++per_port[g.port] == kMaxVrrpGroupsPerPort + 1) {
        error(path + "/port", "port " + q(g.port) + " has more than " +
                                  std::to_string(kMaxVrrpGroupsPerPort) +
                                  " VRRP groups; the fast path accepts " +
                                  std::to_string(kMaxVrrpGroupsPerPort) + " virtual MACs per port");
      }
      // An advertisement must fit the port: IP header, 8 bytes of VRRP and
      // the addresses.
      const bool v6 = g.virtual_addresses.front().family == Family::V6;
      const size_t advert = (v6 ? 40 : 20) + 8 + g.virtual_addresses.size() * (v6 ? 16 : 4);
      const size_t mtu = port && port->mtu ? port->mtu : 1500;
      if (advert > mtu) {
        error(path + "/virtual-addresses",
              std::to_string(g.virtual_addresses.size()) + " virtual addresses make a " +
                  std::to_string(advert) + "-byte advertisement, more than port " + q(g.port) +
                  "'s MTU " + std::to_string(mtu) + "; use fewer (or more groups)");
      }
      if (g.advert_interval_ms % 10 != 0) {
        error(path + "/advert-interval-ms", "the interval is sent in centiseconds; " +
                                                std::to_string(g.advert_interval_ms) +
                                                " ms is not a multiple of 10");
      }
      vrrpAddresses(g, path, port);
      for (const auto& t : g.track) {
        const std::string tpath = path + "/track" + keyPredicate("object", t.object) + "/object";
        switch (t.kind) {
          case VrrpTrack::Kind::kPort:
            if (!c_.findPort(t.name)) {
              error(tpath, "tracks port " + q(t.name) + ", which is not in ports");
            }
            break;
          case VrrpTrack::Kind::kPeer:
            if (std::none_of(c_.peers.begin(), c_.peers.end(),
                             [&](const PeerConfig& p) { return p.name == t.name; })) {
              error(tpath, "tracks peer " + q(t.name) + ", which is not in peers");
            }
            break;
          case VrrpTrack::Kind::kBgp:
            if (auto a = IpAddress::parse(t.name); !a) {
              error(tpath, "tracks BGP session " + q(t.name) + ", which is not an IP address");
            } else if (!c_.bgp.enabled) {
              error(tpath, "tracks a BGP session, but bgp is not enabled");
            } else if (!isBgpSession(*a)) {
              error(tpath, "tracks BGP session " + q(t.name) +
                               ", which is no session of this gateway (a bgp.neighbors "
                               "address, or the remote-vtep of a line of a peer with an "
                               "asn); it would count as down forever");
            }
            break;
          case VrrpTrack::Kind::kFpm:
            if (!c_.bgp.enabled) {
              error(tpath, "tracks zebra's FPM connection, but bgp is not enabled");
            }
            break;
        }
      }
    }
  }

  // The gateway's BGP sessions: its LAN neighbours and the remote VTEPs of
  // the lines of peers with an `asn` (the others have no session).
  bool isBgpSession(const IpAddress& a) const {
    for (const auto& n : c_.bgp.neighbors) {
      if (n.address == a) {
        return true;
      }
    }
    for (const auto& p : c_.peers) {
      if (!p.asn) {
        continue;
      }
      for (const auto& l : p.lines) {
        if (l.remote_vtep == a) {
          return true;
        }
      }
    }
    return false;
  }

  // One family per group: virtual addresses, unicast peers and the source;
  // IPv4 virtual addresses on a subnet of the port (hosts reach them there),
  // none of them an address of the gateway itself.
  void vrrpAddresses(const VrrpGroupConfig& g, const std::string& path, const PortConfig* port) {
    const Family family = g.virtual_addresses.front().family;
    const char* fname = family == Family::V6 ? "IPv6" : "IPv4";
    auto sameFamily = [&](const IpAddress& a, const std::string& where, const char* what) {
      if (a.family != family) {
        error(where, std::string(what) + " " + a.toString() + " is not " + fname +
                         " like the group's first virtual address (one family per group; an " +
                         "IPv4 and an IPv6 group need different VRIDs)");
        return false;
      }
      return true;
    };
    auto linkLocal = [](const IpAddress& a) {
      return a.family == Family::V6 && a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80;
    };
    for (const auto& a : g.virtual_addresses) {
      const std::string where = path + "/virtual-addresses";
      if (!sameFamily(a, where, "virtual address")) {
        continue;
      }
      for (const auto& p : c_.ports) {
        for (const auto& ia : p.addresses) {
          if (ia.address == a) {
            error(where, "virtual address " + a.toString() + " is port " + q(p.name) +
                             "'s own address; a virtual address belongs to the group");
          }
        }
      }
      if (port && family == Family::V4 &&
          std::none_of(port->addresses.begin(), port->addresses.end(),
                       [&](const InterfaceAddress& ia) { return ia.contains(a); })) {
        error(where, "virtual address " + a.toString() + " is on no subnet of port " +
                         q(port->name) + "; hosts reach it over that port");
      }
      if (g.accept_mode && linkLocal(a)) {
        error(path + "/accept-mode",
              "accept-mode cannot take the link-local virtual address " + a.toString() +
                  " (the gateway takes accepted addresses on its loopback, where a "
                  "link-local address matches no LAN); use a global one, or no accept-mode");
      }
    }
    for (const auto& a : g.unicast_peers) {
      sameFamily(a, path + "/unicast-peers", "unicast peer");
    }
    const bool has_family_address =
        port &&
        std::any_of(port->addresses.begin(), port->addresses.end(),
                    [&](const InterfaceAddress& ia) { return ia.address.family == family; });
    if (g.source_address) {
      const IpAddress& src = *g.source_address;
      if (sameFamily(src, path + "/source-address", "source address") && port && !linkLocal(src) &&
          std::none_of(port->addresses.begin(), port->addresses.end(),
                       [&](const InterfaceAddress& ia) { return ia.address == src; })) {
        error(path + "/source-address",
              "source address " + src.toString() + " is not an address of port " + q(port->name));
      }
    } else if (port && !has_family_address && (family == Family::V4 || !g.unicast_peers.empty())) {
      error(path + "/port", std::string("port ") + q(port->name) + " has no " + fname +
                                " address to send the group's advertisements from; give it one " +
                                "or set source-address");
    }
  }

  // " at mcgw.yaml:42", or "" when the object has no line (a built-in range).
  std::string at(int line) const {
    return line > 0 ? " at " + sink_.fileForMessage() + ":" + std::to_string(line) : "";
  }

  void warning(const std::string& path, const std::string& msg) { warn_.at(map_, path, msg); }

  static std::string vpcPath(const VpcConfig& v) {
    return "/mcgw:address-plan/clouds/cloud" + keyPredicate("name", v.cloud) + "/regions/region" +
           keyPredicate("name", v.region) + "/vpcs/vpc" + keyPredicate("name", v.name);
  }
  static std::string vpcName(const VpcConfig& v) {
    return "VPC " + v.cloud + "/" + v.region + "/" + v.name;
  }
  static std::string mappedPath(const MappedRange& m) {
    return "/mcgw:address-plan/mapped-ranges/mapped-range" + keyPredicate("name", m.name);
  }

  // Ranges no VPC prefix or mapped range may overlap.  Unlike the plan's
  // own ranges they may nest (an operator's range may hold a port's
  // subnet); prefixes nest or are disjoint, so the ones overlapping p
  // either contain it (looked up at each length the set holds) or start
  // inside it (looked up by first address).
  class ReservedRanges {
   public:
    struct Entry {
      IpPrefix prefix;
      std::string why;  // "link-local", "underlay: ..."
      // The VPCs of this site may hold the range (a cloud VM's WAN
      // interface is in a subnet of its own VPC); "" for none.
      std::string site;
    };
    void add(const IpPrefix& p, std::string why, std::string site = "") {
      const IpPrefix net = p.network();
      if (by_prefix_.count(net)) {
        return;  // the first reason given stands
      }
      entries_.push_back({net, std::move(why), std::move(site)});
      by_prefix_.emplace(net, entries_.size() - 1);
      by_first_.emplace(net.address, entries_.size() - 1);
      lengths_.insert({net.address.family, net.length});
    }
    // The most specific range containing p, else the lowest inside p; a
    // range of site (when given) does not count.
    const Entry* overlapping(const IpPrefix& p, const std::string* site) const {
      auto counts = [&](size_t i) {
        return entries_[i].site.empty() || !site || entries_[i].site != *site;
      };
      for (auto it = lengths_.rbegin(); it != lengths_.rend(); ++it) {
        if (it->first != p.address.family || it->second > p.length) {
          continue;
        }
        if (auto f = by_prefix_.find(IpPrefix{p.address, it->second}.network());
            f != by_prefix_.end() && counts(f->second)) {
          return &entries_[f->second];
        }
      }
      const auto range = DisjointPrefixes<int>::rangeOf(p);
      for (auto it = by_first_.lower_bound(range.first);
           it != by_first_.end() && it->first <= range.last; ++it) {
        if (counts(it->second)) {
          return &entries_[it->second];
        }
      }
      return nullptr;
    }

   private:
    std::vector<Entry> entries_;
    std::map<IpPrefix, size_t> by_prefix_;
    std::multimap<IpAddress, size_t> by_first_;
    std::set<std::pair<Family, uint8_t>> lengths_;
  };

  void planStore() {
    const auto& plan = c_.address_plan;
    const std::string store = "/mcgw:address-plan/store";
    if (plan.store == AddressPlanConfig::Store::kEtcd && plan.etcd_endpoints.empty()) {
      error(store + "/type", "store type etcd needs at least one endpoint");
    }
    // An etcd cluster's client URLs are all TLS or all plain: a mix would
    // send some requests, and the client key's use, in the clear.
    bool any_https = false;
    const auto& items = map_.items(store + "/endpoints");
    auto scheme = [](const std::string& url) {
      return url.rfind("https://", 0) == 0 ? "https://" : "http://";
    };
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string& url = items[i].loc.raw;
      any_https = any_https || url.rfind("https://", 0) == 0;
      if (i > 0 && std::string(scheme(url)) != scheme(items[0].loc.raw)) {
        error(items[i].path, "endpoint " + text::quote(url) + " is " + scheme(url) + " but " +
                                 text::quote(items[0].loc.raw) + at(items[0].loc.line) + " is " +
                                 scheme(items[0].loc.raw) +
                                 "; the endpoints of one etcd cluster are all https:// or all "
                                 "http://");
      }
    }
    if (!plan.etcd_cert_file.empty() && plan.etcd_key_file.empty()) {
      error(store + "/cert-file",
            "cert-file needs key-file, the private key of the client certificate; give both or "
            "neither");
    } else if (plan.etcd_cert_file.empty() && !plan.etcd_key_file.empty()) {
      error(store + "/key-file",
            "key-file needs cert-file, the client certificate it belongs to; give both or "
            "neither");
    }
    if (!items.empty() && !any_https) {
      for (const auto& [leaf, value] :
           {std::pair<const char*, const std::string*>{"ca-file", &plan.etcd_ca_file},
            {"cert-file", &plan.etcd_cert_file},
            {"key-file", &plan.etcd_key_file}}) {
        if (!value->empty()) {
          error(store + "/" + leaf,
                std::string(leaf) +
                    " is for TLS, but every endpoint is http:// (plain text); use "
                    "https:// endpoints");
        }
      }
    }
  }

  // What the plan keeps out: built-in ranges, this gateway's underlay,
  // 100.64.0.0/10 when a cloud of the plan keeps it, the operator's list.
  ReservedRanges reservedRanges() {
    ReservedRanges r;
    for (const auto& b : kBuiltinReserved) {
      r.add(*IpPrefix::parse(b.prefix), b.why);
    }
    for (const auto& p : c_.ports) {
      if (p.role != PortRole::kWan) {
        continue;
      }
      for (const auto& item : map_.items(portPath(p.name) + "/addresses")) {
        if (auto a = IpPrefix::parse(item.loc.raw)) {
          r.add(*a,
                "underlay: address " + a->toString() + " of wan port " + q(p.name) +
                    at(item.loc.line),
                c_.node.site);
        }
      }
    }
    for (const auto& p : c_.peers) {
      for (const auto& l : p.lines) {
        const std::string lpath = "/mcgw:peers/peer" + keyPredicate("name", p.name) +
                                  "/lines/line" + keyPredicate("name", l.name);
        for (const auto& [leaf, a] :
             {std::pair<const char*, const IpAddress*>{"local-vtep", &l.local_vtep},
              {"remote-vtep", &l.remote_vtep}}) {
          // The local VTEP is this site's, the remote one the peer site's.
          r.add(IpPrefix{*a, static_cast<uint8_t>(a->bits())},
                std::string("underlay: ") + leaf + " of line " + p.name + "/" + l.name +
                    at(map_.find(lpath + "/" + leaf).line),
                a == &l.local_vtep ? c_.node.site : p.name);
        }
      }
    }
    for (const auto& v : c_.address_plan.vpcs) {
      if (const char* cloud = cloudReserving100_64(v.cloud)) {
        r.add(*IpPrefix::parse("100.64.0.0/10"),
              std::string(cloud) + " keeps it for its services, and the plan holds " + vpcName(v) +
                  at(map_.find(vpcPath(v)).line));
        break;
      }
    }
    for (const auto& rr : c_.address_plan.reserved) {
      const std::string path =
          "/mcgw:address-plan/reserved/range" + keyPredicate("name", rr.name) + "/prefix";
      networkPrefix(path);
      r.add(rr.prefix, "address-plan.reserved " + q(rr.name) + at(map_.find(path).line));
    }
    return r;
  }

  // A range the plan holds.  Names are made only for messages: a plan may
  // hold tens of thousands of VPCs.
  struct Claim {
    IpPrefix prefix;
    int line = 0;
    const std::string* path = nullptr;    // of its node
    const VpcConfig* vpc = nullptr;       // a VPC prefix, or
    const MappedRange* mapped = nullptr;  // a mapped range's mapped (or real) range
    bool real = false;
    // A VPC prefix that is the real range of a mapped range at the VPC's
    // site (a legacy overlap): only its site's ranges must not overlap it.
    const MappedRange* legacy_of = nullptr;

    const std::string& site() const { return vpc ? vpc->site : mapped->site; }
    std::string what() const {
      return vpc ? vpcName(*vpc) : "mapped range " + mapped->name + (real ? " (real)" : "");
    }
  };
  struct Owner {
    IpPrefix prefix;
    const Claim* claim = nullptr;
  };

  std::string overlapText(const Claim& c, const Owner& o) const {
    return c.prefix.toString() + " of " + c.what() + " overlaps " + o.prefix.toString() + " of " +
           o.claim->what() + at(o.claim->line);
  }

  void plan() {
    const auto& plan = c_.address_plan;
    planStore();
    const ReservedRanges reserved = reservedRanges();

    // Which mapped range declares a VPC prefix a legacy overlap: the one
    // whose real range is the prefix, at the VPC's site or at no site (as
    // control/frr/render.cpp matches them).
    std::map<IpPrefix, std::vector<const MappedRange*>> by_real;
    for (const auto& m : plan.mapped_ranges) {
      by_real[m.real.network()].push_back(&m);
    }
    auto legacyOf = [&](const VpcConfig& v, const IpPrefix& p) -> const MappedRange* {
      auto it = by_real.find(p);
      if (it == by_real.end()) {
        return nullptr;
      }
      for (const MappedRange* m : it->second) {
        if (m->site == v.site || m->site.empty()) {
          return m;
        }
      }
      return nullptr;
    };

    std::vector<Claim> claims;
    size_t count = plan.mapped_ranges.size();
    for (const auto& v : plan.vpcs) {
      count += v.prefixes.size();
    }
    claims.reserve(count);
    std::set<std::pair<std::string, IpPrefix>> declared_real;  // (site, real) of legacy VPCs
    // A mapping without a site stands for its real range wherever a VPC has
    // it; at two sites the rest of the plan would see one mapped range for
    // two ranges.
    std::map<const MappedRange*, std::pair<const VpcConfig*, int>> siteless;
    for (const auto& v : plan.vpcs) {
      for (const auto& item : map_.items(vpcPath(v) + "/prefixes")) {
        auto p = IpPrefix::parse(item.loc.raw);
        if (!p) {
          continue;
        }
        networkPrefix(item.path);
        const MappedRange* m = by_real.empty() ? nullptr : legacyOf(v, p->network());
        if (m) {
          declared_real.insert({v.site, p->network()});
        }
        if (m && m->site.empty()) {
          auto [it, fresh] = siteless.emplace(m, std::make_pair(&v, item.loc.line));
          const VpcConfig* first = it->second.first;
          if (!fresh && first && first->site != v.site) {
            error(mappedPath(*m), "mapped range " + m->name +
                                      " names no site, and its real range " + m->real.toString() +
                                      " is a prefix of " + vpcName(*first) + at(it->second.second) +
                                      " (site " + q(first->site) + ") and of " + vpcName(v) +
                                      at(item.loc.line) + " (site " + q(v.site) +
                                      "); give it the site of the legacy VPC");
            it->second.first = nullptr;  // said once
          }
        }
        claims.push_back({p->network(), item.loc.line, &item.path, &v, nullptr, false, m});
      }
    }
    std::deque<std::string> paths;  // of mapped ranges' nodes (a deque: claims point into it)
    std::vector<Claim> reals;       // real ranges of mapped ranges that are no VPC's prefix
    for (const auto& m : plan.mapped_ranges) {
      const std::string path = mappedPath(m);
      const std::string& real = paths.emplace_back(path + "/real");
      networkPrefix(real);
      if (!m.site.empty() && !declared_real.count({m.site, m.real.network()})) {
        reals.push_back({m.real.network(), map_.find(real).line, &real, nullptr, &m, true});
      }
      const std::string& mapped = paths.emplace_back(path + "/mapped");
      if (m.real.length != m.mapped.length || m.real.address.family != m.mapped.address.family) {
        error(mapped, "a 1:1 mapping needs ranges of the same family and length; real " +
                          m.real.toString() + ", mapped " + m.mapped.toString());
        continue;
      }
      networkPrefix(mapped);
      claims.push_back({m.mapped.network(), map_.find(mapped).line, &mapped, nullptr, &m});
    }
    // The later object in the file is the one reported, the earlier named.
    auto byLine = [](const Claim& a, const Claim& b) { return a.line < b.line; };
    std::stable_sort(claims.begin(), claims.end(), byLine);
    std::stable_sort(reals.begin(), reals.end(), byLine);

    DisjointPrefixes<Owner> owners;                        // what every site sees
    std::map<std::string, DisjointPrefixes<Owner>> sites;  // real ranges by site
    // Only a site with a legacy range can have two real ranges that overlap
    // (the others' are all in owners): the rest are not indexed twice.
    std::set<std::string> legacy_sites;
    for (const auto& c : claims) {
      if (c.legacy_of) {
        legacy_sites.insert(c.site());
      }
    }
    for (const auto& r : reals) {
      legacy_sites.insert(r.site());
    }
    auto claimAtSite = [&](const Claim& c) {
      auto& at_site = sites[c.site()];
      if (const Owner* o = at_site.overlapping(c.prefix)) {
        error(*c.path, overlapText(c, *o) + ", both at site " + q(c.site()) +
                           "; the real ranges of one site must not overlap (a mapped range lets "
                           "only other sites see past an overlap)");
        return;
      }
      at_site.add(c.prefix, {c.prefix, &c});
    };
    for (const auto& c : claims) {
      if (const auto* r = reserved.overlapping(c.prefix, c.vpc ? &c.vpc->site : nullptr)) {
        error(*c.path, c.prefix.toString() + " of " + c.what() + " overlaps reserved range " +
                           r->prefix.toString() + " (" + r->why + ")");
        continue;
      }
      if (c.legacy_of) {
        claimAtSite(c);
        continue;
      }
      if (const Owner* o = owners.overlapping(c.prefix)) {
        error(*c.path, overlapText(c, *o) +
                           "; the plan must be overlap-free (a legacy VPC that cannot be "
                           "renumbered keeps its prefix with a mapped-range whose real is that "
                           "prefix)");
        continue;
      }
      owners.add(c.prefix, {c.prefix, &c});
      if (c.vpc && legacy_sites.count(c.site())) {
        claimAtSite(c);
      }
    }
    for (const auto& r : reals) {
      claimAtSite(r);
    }
    pools(claims);
  }

  void pools(const std::vector<Claim>& claims) {
    const auto& plan = c_.address_plan;
    struct PoolOwner {
      IpPrefix prefix;
      const PoolConfig* pool;
      int line = 0;
    };
    DisjointPrefixes<PoolOwner> pools;
    for (const auto& p : plan.pools) {
      std::string path = "/mcgw:address-plan/pools/pool" + keyPredicate("name", p.name);
      for (const auto& item : map_.items(path + "/prefixes")) {
        auto parsed = IpPrefix::parse(item.loc.raw);
        if (!parsed) {
          continue;
        }
        const IpPrefix pr = parsed->network();
        const std::string& ppath = item.path;
        networkPrefix(ppath);
        if (const PoolOwner* o = pools.overlapping(pr)) {
          error(ppath, pr.toString() + " of pool " + p.name + " overlaps " + o->prefix.toString() +
                           " of pool " + o->pool->name + at(o->line) +
                           "; pools must not overlap (an allocation must have one pool)");
        } else {
          pools.add(pr, {pr, &p, item.loc.line});
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
    if (pools.empty()) {
      return;  // nothing is allocated: where a range lies says nothing
    }
    std::vector<std::string> names;
    for (const auto& p : plan.pools) {
      names.push_back(p.name);
    }
    // A VPC (or mapped range) outside every pool may be a typo or a range
    // the pools were meant to cover; it works either way, so it is said,
    // not refused.  A legacy VPC's real range is outside by nature.
    for (const auto& c : claims) {
      if (c.legacy_of) {
        continue;
      }
      const PoolOwner* o = pools.overlapping(c.prefix);
      const bool inside =
          o && o->prefix.length <= c.prefix.length && o->prefix.contains(c.prefix.address);
      const std::vector<std::string>* clouds = inside ? &o->pool->clouds : nullptr;
      const bool served = !inside || !c.vpc || clouds->empty() ||
                          std::find(clouds->begin(), clouds->end(), c.vpc->cloud) != clouds->end();
      if (inside && served) {
        continue;
      }
      if (warn_.full()) {
        warning(*c.path, "");  // only counted: no need to word it
      } else if (!inside) {
        warning(*c.path, c.prefix.toString() + " of " + c.what() + " is outside every pool (" +
                             joinBounded(names) + ")");
      } else {
        warning(*c.path, c.prefix.toString() + " of " + c.what() + " lies in " +
                             o->prefix.toString() + " of pool " + o->pool->name + at(o->line) +
                             ", which serves only " + joinBounded(*clouds) + ", not " +
                             q(c.vpc->cloud));
      }
    }
  }

  void metrics() {
    if (!c_.metrics.listen.empty() && !parseListen(c_.metrics.listen)) {
      error("/mcgw:metrics/listen",
            "expected IPV4:PORT or [IPV6]:PORT with a valid address and a port from 1 to 65535, "
            "found " +
                text::quote(c_.metrics.listen));
    }
    const HttpsApiConfig& h = c_.api.https;
    if (!h.listen.empty()) {
      if (!parseListen(h.listen)) {
        error("/mcgw:api/https/listen",
              "expected IPV4:PORT or [IPV6]:PORT with a valid address and a port from 1 to 65535, "
              "found " +
                  text::quote(h.listen));
      }
      if (h.allowed_clients.empty()) {
        error(
            "/mcgw:api/https/listen",
            "the HTTPS API needs allowed-clients: the names of the client certificates it serves");
      }
    }
  }

  void flowAudit() {
    const FlowAuditConfig& f = c_.flow_audit;
    if (f.enabled() && f.collectors.empty()) {
      error("/mcgw:flow-audit/sampling",
            "flow-audit: sampling " + std::to_string(f.sampling) +
                " needs at least one collector (flow-audit.collectors) to export to; 0 turns "
                "flow audit off");
    }
    for (const FlowCollector& c : f.collectors) {
      const auto& b = c.address.bytes;
      const char* why = nullptr;
      if (c.address.family == Family::V4) {
        const bool zero = b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0;
        const bool all = b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255;
        why = zero                   ? "the unspecified address"
              : all                  ? "the broadcast address"
              : (b[0] & 0xf0) == 224 ? "a multicast address"
                                     : nullptr;
      } else {
        bool zero = true;
        for (uint8_t x : b) {
          zero = zero && x == 0;
        }
        why = zero                                    ? "the unspecified address"
              : b[0] == 0xff                          ? "a multicast address"
              : b[0] == 0xfe && (b[1] & 0xc0) == 0x80 ? "a link-local address (no zone to send on)"
                                                      : nullptr;
      }
      if (why) {
        const std::string a = c.address.toString();
        error("/mcgw:flow-audit/collectors/collector" + keyPredicate("address", a) + "/address",
              "flow-audit: collector " + a + " is " + why +
                  "; a collector needs a unicast address the gateway can send IPFIX to");
      }
    }
    if (f.idle_timeout_s > f.active_timeout_s) {
      error("/mcgw:flow-audit/idle-timeout",
            "flow-audit: idle-timeout " + std::to_string(f.idle_timeout_s) +
                " s is longer than active-timeout " + std::to_string(f.active_timeout_s) +
                " s; a flow is exported at least every active-timeout");
    }
  }

  const Config& c_;
  const SourceMap& map_;
  ErrorSink& sink_;
  ErrorSink& warn_;
  bool lan_without_tenant_ = false;  // a lan port lacks the tenant it must name
  size_t policy_rules_ = 0;          // of the tenants checked so far
};

}  // namespace

void checkSemantics(const Config& config, const SourceMap& map, ErrorSink& sink,
                    ErrorSink& warnings) {
  Checker(config, map, sink, warnings).run();
}

}  // namespace detail
}  // namespace mcgw::config
