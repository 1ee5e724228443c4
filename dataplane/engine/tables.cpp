#include "dataplane/engine/tables.hpp"

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "config/units.hpp"
#include "dataplane/proto/checksum.hpp"

namespace mcgw::engine {

// ------------------------------------------------------------ NeighborTable

namespace {

// The MAC as the hash's 64-bit data value: no second array to keep in step.
void* packMac(const Mac& m) {
  uint64_t v = 0;
  for (uint8_t b : m) {
    v = v << 8 | b;
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

Mac unpackMac(const void* data) {
  uint64_t v = reinterpret_cast<uintptr_t>(data);
  Mac m;
  for (int i = 5; i >= 0; --i) {
    m[static_cast<size_t>(i)] = static_cast<uint8_t>(v);
    v >>= 8;
  }
  return m;
}

Mac toMac(const config::MacAddress& m) {
  Mac out;
  std::copy(m.bytes.begin(), m.bytes.end(), out.begin());
  return out;
}

}  // namespace

NeighborTable::Key NeighborTable::key(uint16_t port, bool v6, const uint8_t* address) {
  Key k{};
  k[0] = static_cast<uint8_t>(port);
  k[1] = static_cast<uint8_t>(port >> 8);
  k[2] = v6 ? 1 : 0;
  std::memcpy(k.data() + 4, address, v6 ? 16 : 4);
  return k;
}

Result<std::unique_ptr<NeighborTable>, std::string> NeighborTable::create() {
  static std::atomic<uint32_t> serial{0};
  const std::string name = "nbr" + std::to_string(serial++);
  rte_hash_parameters hp{};
  hp.name = name.c_str();
  hp.entries = kCapacity;
  hp.key_len = sizeof(Key);
  hp.hash_func = rte_hash_crc;
  hp.socket_id = static_cast<int>(rte_socket_id());
  // Lock-free readers beside one writer; a deleted key's slot is freed by
  // the writer after a grace period (rte_hash_free_key_with_position).
  hp.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF;
  std::unique_ptr<NeighborTable> t(new NeighborTable());
  t->hash_ = rte_hash_create(&hp);
  if (!t->hash_) {
    return unexpected(std::string("cannot create the neighbour table: ") + rte_strerror(rte_errno));
  }
  return t;
}

NeighborTable::~NeighborTable() {
  rte_hash_free(hash_);
}

bool NeighborTable::lookup(uint16_t port, bool v6, const uint8_t* address, Mac* mac) const {
  const Key k = key(port, v6, address);
  void* data = nullptr;
  if (rte_hash_lookup_data(hash_, k.data(), &data) < 0) {
    return false;
  }
  *mac = unpackMac(data);
  return true;
}

size_t NeighborTable::sync(const std::map<Key, Mac>& want,
                           const TenantFib::Synchronize& synchronize, size_t* refused) {
  size_t changed = 0;
  *refused = 0;
  std::vector<int32_t> deleted;
  for (auto it = mirror_.begin(); it != mirror_.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    const int32_t pos = rte_hash_del_key(hash_, it->first.data());
    if (pos >= 0) {
      deleted.push_back(pos);
    }
    it = mirror_.erase(it);
    ++changed;
  }
  for (const auto& [k, mac] : want) {
    auto it = mirror_.find(k);
    if (it != mirror_.end() && it->second == mac) {
      continue;
    }
    // A new key, or the data of an existing one replaced atomically.
    if (rte_hash_add_key_data(hash_, k.data(), packMac(mac)) < 0) {
      ++*refused;
      continue;
    }
    mirror_[k] = mac;
    ++changed;
  }
  if (!deleted.empty()) {
    if (synchronize) {
      synchronize();  // no worker still reads a deleted key's slot
    }
    for (int32_t pos : deleted) {
      rte_hash_free_key_with_position(hash_, pos);
    }
  }
  return changed;
}

ForwardingTables::~ForwardingTables() = default;

// ------------------------------------------------------------------ SlotMap

std::optional<uint16_t> SlotMap::assign(const std::string& name, bool* fresh) {
  *fresh = false;
  if (auto it = slots_.find(name); it != slots_.end()) {
    return it->second;
  }
  std::vector<bool> used(capacity_, false);
  for (const auto& [n, s] : slots_) {
    used[s] = true;
  }
  for (size_t s = 0; s < capacity_; ++s) {
    if (!used[s]) {
      slots_[name] = static_cast<uint16_t>(s);
      *fresh = true;
      return static_cast<uint16_t>(s);
    }
  }
  return std::nullopt;
}

void SlotMap::retain(const std::vector<std::string>& keep) {
  std::set<std::string> k(keep.begin(), keep.end());
  std::erase_if(slots_, [&](const auto& e) { return !k.count(e.first); });
}

// -------------------------------------------------------------- TablesInput

TablesInput TablesInput::fromConfig(const config::Config& c, std::map<std::string, OpenPort> ports,
                                    unsigned workers) {
  using config::Family;
  TablesInput in;
  in.config = &c;
  in.ports = std::move(ports);
  in.workers = workers;
  // The gateway's own addresses: those of every open port.
  std::vector<RouteSpec> local;
  for (const auto& pc : c.ports) {
    if (!in.ports.count(pc.name)) {
      continue;
    }
    for (const auto& a : pc.addresses) {
      RouteSpec r;
      r.prefix = {a.address, static_cast<uint8_t>(a.address.bits())};
      r.vias = {Via{Via::Kind::kLocal, {}, {}, {}}};
      r.distance = defaultDistance(RouteSource::kLocal);
      local.push_back(std::move(r));
    }
  }
  for (const auto& tc : c.tenants) {
    auto& sources = in.routes[tc.name];
    auto& statics = sources[RouteSource::kStatic];
    for (const auto& r : tc.routes) {
      RouteSpec s;
      s.prefix = r.prefix;
      s.distance = defaultDistance(RouteSource::kStatic);
      Via v;
      if (!r.peer.empty()) {
        v.kind = Via::Kind::kTunnel;
        v.peer = r.peer;
      } else if (r.next_hop) {
        v.kind = Via::Kind::kGateway;
        v.address = *r.next_hop;
      }
      s.vias = {v};
      statics.push_back(std::move(s));
    }
    auto& connected = sources[RouteSource::kConnected];
    for (const auto& pc : c.ports) {
      if (pc.role != config::PortRole::kLan || pc.tenant != tc.name || !in.ports.count(pc.name)) {
        continue;
      }
      for (const auto& a : pc.addresses) {
        RouteSpec s;
        s.prefix = a.network();
        s.distance = defaultDistance(RouteSource::kConnected);
        s.vias = {Via{Via::Kind::kConnected, {}, pc.name, {}}};
        connected.push_back(std::move(s));
      }
    }
    sources[RouteSource::kLocal] = local;
  }
  return in;
}

// ----------------------------------------------------------------- topology

// What names resolve to, as of one build.
struct TablesBuilder::Topology {
  struct Lan {
    std::string name;
    uint16_t id = kNoPort;  // kNoPort: configured, not open
    std::vector<config::IpPrefix> subnets;
  };
  std::map<std::string, std::vector<Lan>> lan;                          // by tenant
  std::map<std::pair<std::string, std::string>, uint16_t> tunnel_slot;  // (peer, tenant)
  std::set<std::string> peers;
  std::map<uint16_t, std::string> tunnel_peer;  // slot -> peer
  std::map<uint16_t, std::string> port_name;    // DPDK port id -> name

  // Whether a route resolved against `other` resolves the same here (same
  // tunnel slots, ports, subnets): then kept routes need no re-resolving.
  bool resolvesAs(const Topology& other) const {
    auto lans = [](const std::map<std::string, std::vector<Lan>>& m) {
      std::map<std::string,
               std::vector<std::tuple<std::string, uint16_t, std::vector<config::IpPrefix>>>>
          out;
      for (const auto& [tenant, v] : m) {
        for (const auto& l : v) {
          out[tenant].emplace_back(l.name, l.id, l.subnets);
        }
      }
      return out;
    };
    return tunnel_slot == other.tunnel_slot && peers == other.peers &&
           port_name == other.port_name && lans(lan) == lans(other.lan);
  }

  Result<NextHop, std::string> resolve(const std::string& tenant, const Via& via) const {
    NextHop nh;
    switch (via.kind) {
      case Via::Kind::kLocal:
        nh.kind = NextHop::Kind::kLocal;
        return nh;
      case Via::Kind::kTunnel: {
        if (!peers.count(via.peer)) {
          return unexpected("there is no peer " + via.peer);
        }
        auto it = tunnel_slot.find({via.peer, tenant});
        if (it == tunnel_slot.end()) {
          return unexpected("peer " + via.peer + " does not carry tenant " + tenant);
        }
        nh.kind = NextHop::Kind::kTunnel;
        nh.tunnel = it->second;
        return nh;
      }
      case Via::Kind::kConnected:
      case Via::Kind::kGateway:
        break;
    }
    const Lan* on = nullptr;
    if (auto it = lan.find(tenant); it != lan.end()) {
      for (const auto& l : it->second) {
        if (!via.port.empty()) {
          on = l.name == via.port ? &l : on;
          continue;
        }
        for (const auto& s : l.subnets) {
          if (s.contains(via.address)) {
            on = &l;
          }
        }
      }
    }
    if (!on) {
      if (!via.port.empty()) {
        return unexpected("port " + via.port + " is no LAN port of tenant " + tenant);
      }
      return unexpected("next hop " + via.address.toString() + " is on no LAN port of the tenant");
    }
    nh.port = on->id;
    if (via.kind == Via::Kind::kConnected) {
      nh.kind = NextHop::Kind::kConnected;
      return nh;
    }
    nh.kind = NextHop::Kind::kGateway;
    nh.v6 = via.address.family == config::Family::V6 ? 1 : 0;
    nh.address = via.address.bytes;
    if (!nh.v6) {
      std::fill(nh.address.begin() + 4, nh.address.end(), 0);
    }
    return nh;
  }
};

struct TablesBuilder::Tenant {
  explicit Tenant(const std::string& name) : rib(name) {}
  TenantRib rib;
  std::shared_ptr<TenantFib> fib;
};

namespace {

// An encrypted line's outer headers: the ESP header and IV (and the RFC
// 3948 UDP header) go between the IP header and the tunnel's UDP header
// (transport mode over the outer IP: docs/encryption.md); the IP protocol
// becomes ESP (or UDP); the SPI is written once, the sequence number and
// the IV per packet.
void addEspHeader(LineEntry& le) {
  const size_t ip_len = le.header.ipv6 ? 40 : 20;
  const size_t at = le.outer_l3 + ip_len;
  const size_t natt = le.esp_udp ? crypto::kNatTUdpLen : 0;
  const size_t insert = natt + crypto::kEspPrefixLen;
  uint8_t* o = le.outer.data();
  std::memmove(o + at + insert, o + at, le.outer_len - at);
  std::memset(o + at, 0, insert);
  if (le.esp_udp) {
    o[at] = o[at + 2] = crypto::kNatTPort >> 8;
    o[at + 1] = o[at + 3] = crypto::kNatTPort & 0xff;  // length per packet, checksum 0
  }
  le.esp_at = static_cast<uint8_t>(at + natt);
  const uint32_t spi = le.esp->spi();
  o[le.esp_at] = static_cast<uint8_t>(spi >> 24);
  o[le.esp_at + 1] = static_cast<uint8_t>(spi >> 16);
  o[le.esp_at + 2] = static_cast<uint8_t>(spi >> 8);
  o[le.esp_at + 3] = static_cast<uint8_t>(spi);
  le.outer_len = static_cast<uint8_t>(le.outer_len + insert);
  le.outer_l4 = static_cast<uint8_t>(le.outer_l4 + insert);
  uint8_t* ip = o + le.outer_l3;
  const uint8_t ip_proto = le.esp_udp ? 17 : crypto::kIpProtoEsp;
  if (!le.header.ipv6) {
    ip[9] = ip_proto;  // total length, TOS and checksum are still zero
    le.outer_sum = proto::checksumAdd(proto::Bytes(reinterpret_cast<const std::byte*>(ip), 20));
  } else {
    ip[6] = ip_proto;  // the tunnel's UDP checksum keeps its pseudo-header (next header 17)
  }
}

using Topology = TablesBuilder::Topology;
using Tenant = TablesBuilder::Tenant;

// The index of vias' next hop if it exists already (no reference taken).
std::optional<uint32_t> findVias(const NextHopTable& table, const Topology& topo,
                                 const std::string& tenant, const std::vector<Via>& vias) {
  std::vector<uint32_t> members;
  for (const auto& v : vias) {
    auto nh = topo.resolve(tenant, v);
    if (!nh) {
      return std::nullopt;
    }
    auto i = table.find(*nh);
    if (!i) {
      return std::nullopt;
    }
    members.push_back(*i);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  if (members.size() == 1) {
    return members[0];
  }
  if (members.empty() || members.size() > kMaxEcmp) {
    return std::nullopt;
  }
  NextHop g;
  g.kind = NextHop::Kind::kEcmp;
  g.n_members = static_cast<uint8_t>(members.size());
  std::copy(members.begin(), members.end(), g.members.begin());
  return table.find(g);
}

// A reference to vias' next hop (an ECMP group for several).
Result<uint32_t, std::string> acquireVias(NextHopTable& table, const Topology& topo,
                                          const std::string& tenant, const std::vector<Via>& vias) {
  if (vias.empty() || vias.size() > kMaxEcmp) {
    return unexpected("a route has 1 to " + std::to_string(kMaxEcmp) + " next hops, not " +
                      std::to_string(vias.size()));
  }
  std::vector<NextHop> resolved;
  for (const auto& v : vias) {
    auto nh = topo.resolve(tenant, v);
    if (!nh) {
      return unexpected(nh.error());
    }
    if (vias.size() > 1 && nh->kind == NextHop::Kind::kLocal) {
      return unexpected(std::string("an ECMP group cannot hold the gateway itself"));
    }
    resolved.push_back(*nh);
  }
  std::vector<uint32_t> members;
  for (const auto& nh : resolved) {
    auto i = table.acquire(nh);
    if (!i) {
      for (uint32_t m : members) {
        table.release(m);
      }
      return unexpected(i.error());
    }
    members.push_back(*i);
  }
  if (members.size() == 1) {
    return members[0];
  }
  return table.acquireGroup(std::move(members));
}

// Stages source's route for prefix (vias null: withdrawn) in t's RIB.
Result<bool, std::string> stageRoute(Tenant& t, const Topology& topo, RouteSource source,
                                     const config::IpPrefix& prefix, const std::vector<Via>* vias,
                                     uint8_t distance) {
  if (!vias) {
    t.rib.set(prefix, source, std::nullopt);
    return true;
  }
  if (auto old = t.rib.candidate(prefix, source); old && old->distance == distance) {
    if (auto same = findVias(t.rib.nextHops(), topo, t.rib.name(), *vias);
        same && *same == old->next_hop) {
      return true;  // unchanged
    }
  }
  auto nh = acquireVias(t.rib.nextHops(), topo, t.rib.name(), *vias);
  if (!nh) {
    return unexpected("tenant " + t.rib.name() + ", route " + prefix.toString() + ": " +
                      nh.error());
  }
  t.rib.set(prefix, source, Candidate{source, distance, *nh});
  return true;
}

// Makes the staged RIB changes of `tenants` the FIBs' (in place) and commits
// them; all or nothing.  Next-hop indexes the change freed are reusable when
// it returns.
Result<bool, std::string> commitTenants(const std::vector<Tenant*>& tenants,
                                        const TenantFib::Synchronize& synchronize) {
  std::vector<Tenant*> applied;
  std::string error;
  for (Tenant* t : tenants) {
    const auto changes = t->rib.changes();
    if (changes.empty()) {
      continue;
    }
    auto r = t->fib->apply(changes, synchronize);
    if (!r) {
      error = r.error();
      break;
    }
    applied.push_back(t);
  }
  if (!error.empty()) {
    // Those already changed go back: their reverse changes free what the
    // forward ones took.
    // A FIB that cannot be changed back (out of memory) keeps the new
    // routes, and so does its RIB: a RIB put back over a changed FIB would
    // free next-hop indexes the FIB still returns.
    std::vector<Tenant*> stuck;
    for (auto it = applied.rbegin(); it != applied.rend(); ++it) {
      if (auto r = (*it)->fib->apply((*it)->rib.reverse(), synchronize); !r) {
        error += "; and tenant " + (*it)->rib.name() +
                 "'s FIB could not be changed back (it keeps the new routes): " + r.error();
        stuck.push_back(*it);
      }
    }
    for (Tenant* t : tenants) {
      if (std::count(stuck.begin(), stuck.end(), t)) {
        t->rib.commit();
      } else {
        t->rib.abort();
      }
    }
  } else {
    for (Tenant* t : tenants) {
      t->rib.commit();
    }
  }
  bool retiring = false;
  for (Tenant* t : tenants) {
    retiring = retiring || t->rib.nextHops().retiring();
  }
  // A retired index waits until no worker can still hold it from a FIB
  // lookup made before the change.
  if (retiring && !applied.empty() && synchronize) {
    synchronize();
  }
  for (Tenant* t : tenants) {
    t->rib.nextHops().reclaim();
  }
  if (!error.empty()) {
    return unexpected(error);
  }
  return true;
}

void abortTenants(const std::vector<Tenant*>& tenants) {
  for (Tenant* t : tenants) {
    t->rib.abort();
    t->rib.nextHops().reclaim();  // never in a FIB: reusable at once
  }
}

// The neighbours the fast path should know: per open port what the kernel
// resolved, then the config's static entries (which win).
std::map<NeighborTable::Key, Mac> wantedNeighbors(const TablesInput& in) {
  std::map<NeighborTable::Key, Mac> want;
  for (const auto& pc : in.config->ports) {
    auto it = in.ports.find(pc.name);
    if (it == in.ports.end()) {
      continue;
    }
    auto add = [&](const config::StaticNeighbor& n) {
      want[NeighborTable::key(it->second.port_id, n.address.family == config::Family::V6,
                              n.address.bytes.data())] = toMac(n.mac);
    };
    for (const auto& n : it->second.neighbors) {
      add(n);
    }
    for (const auto& n : pc.neighbors) {
      add(n);
    }
  }
  return want;
}

// Each line's next-hop MAC ("peer/line"), from those neighbours.
std::map<std::string, std::optional<Mac>> lineMacs(const TablesInput& in,
                                                   const std::map<NeighborTable::Key, Mac>& want) {
  std::map<std::string, std::optional<Mac>> out;
  for (const auto& peer : in.config->peers) {
    for (const auto& lc : peer.lines) {
      std::optional<Mac> mac;
      if (auto it = in.ports.find(lc.port); it != in.ports.end()) {
        const config::IpAddress nh = lc.next_hop.value_or(lc.remote_vtep);
        auto n = want.find(NeighborTable::key(it->second.port_id, nh.family == config::Family::V6,
                                              nh.bytes.data()));
        if (n != want.end()) {
          mac = n->second;
        }
      }
      out[peer.name + "/" + lc.name] = mac;
    }
  }
  return out;
}

// Marks a writer; a second one at the same time is refused.
class WriterGuard {
 public:
  explicit WriterGuard(std::atomic<bool>& flag) : flag_(flag), held_(!flag.exchange(true)) {}
  ~WriterGuard() {
    if (held_) {
      flag_.store(false);
    }
  }
  bool held() const { return held_; }

 private:
  std::atomic<bool>& flag_;
  bool held_;
};

const char* const kBusy = "another change of the forwarding tables is under way";

}  // namespace

// ------------------------------------------------------------ TablesBuilder

TablesBuilder::TablesBuilder()
    : line_slots_(kMaxLines),
      tunnel_slots_(kMaxTunnels),
      mapped_slots_(kMaxMapped),
      tenant_line_slots_(kMaxTenantLines),
      policy_(std::make_unique<PolicyBuilder>()) {}

TablesBuilder::~TablesBuilder() = default;

Result<std::unique_ptr<ForwardingTables>, std::string> TablesBuilder::build(
    const TablesInput& input, const TenantFib::Synchronize& synchronize) {
  using config::Family;
  WriterGuard guard(writing_);
  if (!guard.held()) {
    return unexpected(std::string(kBusy));
  }
  const config::Config& c = *input.config;
  const auto& open_ports = input.ports;
  std::unique_ptr<ForwardingTables> t(new ForwardingTables());
  t->generation = generation_ + 1;
  t->idle_sleep_max_us = c.fast_path.idle_sleep_max_us;
  std::vector<uint16_t> fresh_lines, fresh_tunnels;
  // Counter slots are assigned as the lines and tunnels come; a failure
  // puts the maps back.
  const SlotMap saved_lines = line_slots_, saved_tunnels = tunnel_slots_,
                saved_mapped = mapped_slots_, saved_tenant_lines = tenant_line_slots_;
  std::vector<uint16_t> fresh_tenant_lines;
  std::vector<std::string> tenant_line_names;
  std::vector<std::unique_ptr<Tenant>> created;
  std::vector<Tenant*> staged;
  auto fail = [&](std::string why) -> Result<std::unique_ptr<ForwardingTables>, std::string> {
    abortTenants(staged);
    line_slots_ = saved_lines;
    tunnel_slots_ = saved_tunnels;
    mapped_slots_ = saved_mapped;
    tenant_line_slots_ = saved_tenant_lines;
    return unexpected(std::move(why));
  };

  auto tenantIndex = [&](const std::string& name) -> uint16_t {
    for (size_t i = 0; i < c.tenants.size(); ++i) {
      if (c.tenants[i].name == name) {
        return static_cast<uint16_t>(i);
      }
    }
    return kNoTenant;
  };

  auto topo = std::make_unique<Topology>();
  const auto want_neighbors = wantedNeighbors(input);
  const auto line_macs = lineMacs(input, want_neighbors);

  // Ports, by DPDK port id.
  std::map<std::string, uint16_t> port_ids;
  for (const auto& pc : c.ports) {
    if (pc.role == config::PortRole::kLan) {
      Topology::Lan l;
      l.name = pc.name;
      for (const auto& a : pc.addresses) {
        l.subnets.push_back(a.network());
      }
      if (auto it = open_ports.find(pc.name); it != open_ports.end()) {
        l.id = it->second.port_id;
      }
      topo->lan[pc.tenant].push_back(std::move(l));
    }
    auto it = open_ports.find(pc.name);
    if (it == open_ports.end()) {
      continue;  // configured but not open: status says so
    }
    const OpenPort& op = it->second;
    if (op.port_id >= kMaxPorts) {
      return fail("port " + pc.name + ": DPDK port id " + std::to_string(op.port_id) +
                  " is beyond the fast path's " + std::to_string(kMaxPorts));
    }
    PortEntry& pe = t->ports[op.port_id];
    pe.present = true;
    pe.lan = pc.role == config::PortRole::kLan;
    pe.tenant = pe.lan ? tenantIndex(pc.tenant) : kNoTenant;
    pe.mtu = pc.mtu;
    pe.mac = op.mac;
    pe.name = pc.name;
    pe.addresses = pc.addresses;
    port_ids[pc.name] = op.port_id;
    topo->port_name[op.port_id] = pc.name;
    if (op.tap_port_id) {
      if (*op.tap_port_id >= kMaxPorts) {
        return fail("port " + pc.name + ": its TAP's DPDK port id is beyond the fast path's " +
                    std::to_string(kMaxPorts));
      }
      pe.exception = *op.tap_port_id;
      PortEntry& tap = t->ports[*op.tap_port_id];
      tap.present = true;
      tap.tap = true;
      tap.phys = op.port_id;
      tap.lan = pe.lan;
      tap.tenant = kNoTenant;
      tap.mtu = pc.mtu;
      tap.mac = op.mac;
      tap.name = pc.name + " (kernel)";
    }
    for (const auto& a : pc.addresses) {
      if (a.address.family == Family::V4) {
        std::array<uint8_t, 4> b;
        std::copy_n(a.address.bytes.begin(), 4, b.begin());
        if (!pe.icmp_source4) {
          pe.icmp_source4 = b;
        }
      } else if (!pe.icmp_source6) {
        pe.icmp_source6 = a.address.bytes;
      }
    }
  }

  // Tenants and the source of their ICMP errors.
  for (const auto& tc : c.tenants) {
    TenantEntry te;
    te.name = tc.name;
    te.vni = tc.vni;
    te.yellow_dscp = tc.bandwidth.yellow_dscp ? int16_t{*tc.bandwidth.yellow_dscp} : int16_t{-1};
    for (const auto& pc : c.ports) {
      if (pc.role != config::PortRole::kLan || pc.tenant != tc.name) {
        continue;
      }
      for (const auto& a : pc.addresses) {
        if (a.address.family == Family::V4 && !te.icmp_source4) {
          std::array<uint8_t, 4> b;
          std::copy_n(a.address.bytes.begin(), 4, b.begin());
          te.icmp_source4 = b;
        } else if (a.address.family == Family::V6 && !te.icmp_source6) {
          te.icmp_source6 = a.address.bytes;
        }
      }
    }
    t->tenants.push_back(std::move(te));
  }

  // Mapped ranges: per tenant, both directions' tables; counter slots by name.
  std::vector<std::string> mapped_names;
  std::vector<uint16_t> fresh_mapped;
  for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
    auto it = input.mapped.find(c.tenants[ti].name);
    if (it == input.mapped.end() || it->second.empty()) {
      continue;
    }
    std::vector<proto::PrefixRule> out, in;
    for (const MappedRangeSpec& m : it->second) {
      const bool v6 = m.real.address.family == Family::V6;
      if (m.mapped.address.family != m.real.address.family || m.mapped.length != m.real.length) {
        return fail("mapped range " + m.name + ": real " + m.real.toString() + " and mapped " +
                    m.mapped.toString() + " differ in family or length");
      }
      bool fresh = false;
      auto slot = mapped_slots_.assign(m.name, &fresh);
      if (!slot) {
        return fail("more than " + std::to_string(kMaxMapped) + " mapped ranges");
      }
      if (fresh) {
        fresh_mapped.push_back(*slot);
      }
      mapped_names.push_back(m.name);
      const auto& real = m.real.address.bytes;
      const auto& mapped = m.mapped.address.bytes;
      out.push_back(proto::PrefixRule::make(v6, real.data(), mapped.data(), m.real.length, *slot));
      in.push_back(proto::PrefixRule::make(v6, mapped.data(), real.data(), m.real.length, *slot));
      t->mapped.push_back(
          {m.name, c.tenants[ti].name, m.real.network(), m.mapped.network(), *slot});
    }
    auto mapping = std::make_shared<TenantMapping>();
    if (!mapping->out.assign(std::move(out))) {
      return fail("tenant " + c.tenants[ti].name +
                  ": the real ranges of its mapped ranges overlap");
    }
    if (!mapping->in.assign(std::move(in))) {
      return fail("tenant " + c.tenants[ti].name + ": its mapped ranges overlap");
    }
    t->tenants[ti].mapping = std::move(mapping);
  }
  mapped_slots_.retain(mapped_names);

  // Lines, peer VTEPs and tunnels (one per peer and carried tenant).
  std::vector<std::string> line_names, tunnel_names;
  std::vector<std::pair<uint64_t, uint16_t>> tunnel_keys;  // (peer << 32 | VNI, tunnel)
  std::vector<std::pair<uint32_t, ForwardingTables::VtepHit>> vtep4;
  std::vector<std::pair<std::array<uint8_t, 16>, ForwardingTables::VtepHit>> vtep6;
  std::vector<std::pair<uint32_t, ForwardingTables::SaHit>> esp_in;
  for (size_t pi = 0; pi < c.peers.size(); ++pi) {
    const auto& peer = c.peers[pi];
    t->peer_names.push_back(peer.name);
    topo->peers.insert(peer.name);
    if (peer.lines.size() > kMaxLinesPerPeer) {
      return fail("peer " + peer.name + ": more than " + std::to_string(kMaxLinesPerPeer) +
                  " lines");
    }
    std::vector<uint16_t> line_indexes;
    std::array<uint64_t, kMaxLinesPerPeer> line_capacity{};  // bits/s, by position
    for (const auto& lc : peer.lines) {
      LineEntry le;
      const std::string key = peer.name + "/" + lc.name;
      bool fresh = false;
      auto slot = line_slots_.assign(key, &fresh);
      if (!slot) {
        return fail("more than " + std::to_string(kMaxLines) + " lines");
      }
      if (fresh) {
        fresh_lines.push_back(*slot);
      }
      line_names.push_back(key);
      le.slot = *slot;
      le.pos = static_cast<uint8_t>(line_indexes.size());
      le.peer = peer.name;
      le.name = lc.name;
      le.mtu = lc.mtu;
      if (!lc.capacity.empty()) {
        auto bits = config::parseRate(lc.capacity);
        if (!bits) {
          return fail("line " + key + ": " + bits.error());
        }
        // The line's rate, in a bucket its shapers in all workers share;
        // each worker's queues hold queue-ms of its share of the capacity.
        const unsigned workers = std::max(1u, input.workers);
        le.shape.rate_bytes = std::max<uint64_t>(1, *bits / 8);
        le.shape.queue = policy::queuePackets(*bits / workers, lc.queue_ms);
        le.shape.mtu = std::max<uint32_t>(lc.mtu, 1500) + 18;
        line_capacity[line_indexes.size()] = *bits;
      }
      le.next_hop = lc.next_hop.value_or(lc.remote_vtep);
      le.header.ipv6 = lc.remote_vtep.family == Family::V6;
      le.header.ttl = lc.outer_ttl;
      le.header.encapsulation = peer.encapsulation == config::Encapsulation::kGeneve
                                    ? proto::Encapsulation::kGeneve
                                    : proto::Encapsulation::kVxlan;
      std::copy(lc.local_vtep.bytes.begin(), lc.local_vtep.bytes.end(), le.header.local);
      std::copy(lc.remote_vtep.bytes.begin(), lc.remote_vtep.bytes.end(), le.header.remote);
      if (auto it = port_ids.find(lc.port); it != port_ids.end()) {
        le.port = it->second;
        std::copy_n(t->ports[le.port].mac.begin(), 6, le.header.src_mac);
        if (const auto& mac = line_macs.at(key)) {
          std::copy(mac->begin(), mac->end(), le.header.dst_mac);
          le.resolved = true;
        }
      }
      {
        const std::array<std::byte, 14> no_inner{};
        le.outer_len = static_cast<uint8_t>(proto::encodeTunnelHeaders(
            proto::MutableBytes(reinterpret_cast<std::byte*>(le.outer.data()), le.outer.size()),
            le.header, 0, proto::Bytes(no_inner.data(), no_inner.size()), 0));
        le.outer_l3 = 14;  // encodeTunnelHeaders writes an untagged Ethernet header
        le.outer_l4 = static_cast<uint8_t>(le.outer_l3 + (le.header.ipv6 ? 40 : 20));
        uint8_t* ip = le.outer.data() + le.outer_l3;
        if (!le.header.ipv6) {
          ip[1] = 0;            // TOS
          ip[2] = ip[3] = 0;    // total length
          ip[10] = ip[11] = 0;  // checksum
          le.outer_sum =
              proto::checksumAdd(proto::Bytes(reinterpret_cast<const std::byte*>(ip), 20));
        } else {
          le.outer_sum = proto::pseudoHeaderV6(ip + 8, ip + 24, 17, 0);
        }
      }
      if (peer.encrypts(lc)) {
        le.encrypted = true;
        t->any_encrypted = true;
        le.esp_udp = peer.encryption->udp_encapsulation;
        if (auto it = input.sas.find(key); it != input.sas.end()) {
          const LineSas& sas = it->second;
          for (const auto& sa : sas.inbound) {
            if (!sa || !sa->inbound()) {
              continue;
            }
            for (const auto& [spi, other] : esp_in) {
              if (spi == sa->spi()) {
                return fail("line " + key + ": inbound SPI " + std::to_string(spi) +
                            " is also line " + t->lines[other.line].peer + "/" +
                            t->lines[other.line].name + "'s");
              }
            }
            esp_in.emplace_back(sa->spi(),
                                ForwardingTables::SaHit{sa.get(), uint16_t(t->lines.size())});
            t->sas.push_back(sa);
          }
          if (sas.outbound && !sas.outbound->inbound()) {
            le.esp = sas.outbound.get();
            t->sas.push_back(sas.outbound);
            addEspHeader(le);
          }
        }
      }
      const ForwardingTables::VtepHit hit{static_cast<uint16_t>(pi),
                                          static_cast<uint16_t>(t->lines.size())};
      if (!le.header.ipv6) {
        uint32_t a;
        std::memcpy(&a, lc.remote_vtep.bytes.data(), 4);
        vtep4.emplace_back(a, hit);
      } else {
        vtep6.emplace_back(lc.remote_vtep.bytes, hit);
      }
      line_indexes.push_back(static_cast<uint16_t>(t->lines.size()));
      t->lines.push_back(std::move(le));
    }
    for (size_t ti = 0; ti < c.tenants.size(); ++ti) {
      const auto& tc = c.tenants[ti];
      if (!peer.tenants.empty() &&
          std::find(peer.tenants.begin(), peer.tenants.end(), tc.name) == peer.tenants.end()) {
        continue;
      }
      TunnelEntry te;
      const std::string key = peer.name + "/" + tc.name;
      bool fresh = false;
      auto slot = tunnel_slots_.assign(key, &fresh);
      if (!slot) {
        return fail("more than " + std::to_string(kMaxTunnels) + " tunnels");
      }
      if (fresh) {
        fresh_tunnels.push_back(*slot);
      }
      tunnel_names.push_back(key);
      te.slot = *slot;
      te.peer = static_cast<uint16_t>(pi);
      te.tenant = static_cast<uint16_t>(ti);
      te.vni = tc.vni;
      te.priority = tc.bandwidth.priority;
      te.ecmp = peer.line_mode == config::LineMode::kEcmp;
      te.n_lines = static_cast<uint8_t>(line_indexes.size());
      std::copy(line_indexes.begin(), line_indexes.end(), te.lines.begin());
      for (size_t li = 0; li < line_indexes.size(); ++li) {
        const LineEntry& le = t->lines[line_indexes[li]];
        const std::string tl = tc.name + "/" + peer.name + "/" + le.name;
        bool tl_fresh = false;
        auto tl_slot = tenant_line_slots_.assign(tl, &tl_fresh);
        if (!tl_slot) {
          return fail("more than " + std::to_string(kMaxTenantLines) + " (tenant, line) pairs");
        }
        if (tl_fresh) {
          fresh_tenant_lines.push_back(*tl_slot);
        }
        tenant_line_names.push_back(tl);
        te.tenant_line[li] = *tl_slot;
        t->tenant_lines.push_back({tc.name, peer.name, le.name, *tl_slot,
                                   le.shape.rate_bytes ? line_capacity[li] : 0,
                                   tc.bandwidth.priority});
      }
      te.inner_dst = toMac(peer.inner_mac);
      te.mss_insert = peer.mss_insert;
      te.name = key;
      const auto idx = static_cast<uint16_t>(t->tunnels.size());
      t->tunnel_of_slot[te.slot] = idx;
      topo->tunnel_slot[{peer.name, tc.name}] = te.slot;
      topo->tunnel_peer[te.slot] = peer.name;
      tunnel_keys.emplace_back(uint64_t{pi} << 32 | tc.vni, idx);
      t->tunnels.push_back(std::move(te));
    }
  }
  line_slots_.retain(line_names);
  tunnel_slots_.retain(tunnel_names);
  tenant_line_slots_.retain(tenant_line_names);
  t->vtep4.build(vtep4);
  t->esp_in.build(esp_in);
  t->vtep6.build(vtep6);
  t->tunnel_by_vni.build(tunnel_keys);
  // Stand-ins: the other gateways' tunnels of the same site and tenant,
  // found through (site, tenant) buckets (this runs on every publish).
  std::map<std::pair<std::string_view, uint16_t>, std::vector<uint16_t>> by_site;
  for (size_t i = 0; i < t->tunnels.size(); ++i) {
    const TunnelEntry& te = t->tunnels[i];
    by_site[{c.peers[te.peer].siteName(), te.tenant}].push_back(static_cast<uint16_t>(i));
  }
  for (const auto& [key, members] : by_site) {
    for (uint16_t i : members) {
      TunnelEntry& te = t->tunnels[i];
      for (uint16_t o : members) {
        if (t->tunnels[o].peer != te.peer && te.n_stand_ins < te.stand_ins.size()) {
          te.stand_ins[te.n_stand_ins++] = o;
        }
      }
    }
  }

  // Routes: each source given in the input replaces what it gave before.
  // Tenants that stay are staged in their RIBs; new ones get a RIB and a FIB
  // built once with all their routes.
  std::vector<Tenant*> kept;
  for (const auto& tc : c.tenants) {
    Tenant* tenant = nullptr;
    if (auto it = tenants_.find(tc.name); it != tenants_.end()) {
      tenant = it->second.get();
      kept.push_back(tenant);
    } else {
      created.push_back(std::make_unique<Tenant>(tc.name));
      tenant = created.back().get();
    }
    staged.push_back(tenant);
    auto sources = input.routes.find(tc.name);
    // Sources the input does not name keep their routes, re-resolved here
    // by name against the new topology; a route whose peer or port went is
    // withdrawn from the RIB (and comes back if a later build resolves it).
    const bool same_topology = topology_ && topo->resolvesAs(*topology_);
    if (auto kept_specs = specs_.find(tc.name); !same_topology && kept_specs != specs_.end()) {
      for (const auto& [source, by_prefix] : kept_specs->second) {
        if (sources != input.routes.end() && sources->second.count(source)) {
          continue;
        }
        for (const auto& [p, spec] : by_prefix) {
          if (!stageRoute(*tenant, *topo, source, p, &spec.vias, spec.distance)) {
            (void)stageRoute(*tenant, *topo, source, p, nullptr, 0);  // cannot fail
          }
        }
      }
    }
    if (sources == input.routes.end()) {
      continue;
    }
    for (const auto& [source, specs] : sources->second) {
      std::map<config::IpPrefix, const RouteSpec*> want;
      for (const auto& s : specs) {
        want[s.prefix.network()] = &s;
      }
      for (const auto& p : tenant->rib.prefixes(source)) {
        if (!want.count(p)) {
          (void)stageRoute(*tenant, *topo, source, p, nullptr, 0);  // a withdrawal cannot fail
        }
      }
      for (const auto& [p, s] : want) {
        if (auto r = stageRoute(*tenant, *topo, source, p, &s->vias, s->distance); !r) {
          return fail(r.error());
        }
      }
    }
  }
  for (auto& tenant : created) {
    auto fib = TenantFib::create(tenant->rib.name(), tenant->rib.installed());
    if (!fib) {
      return fail(fib.error());
    }
    tenant->fib = std::shared_ptr<TenantFib>(std::move(*fib));
  }
  if (!neighbors_) {
    auto n = NeighborTable::create();
    if (!n) {
      return fail(n.error());
    }
    neighbors_ = std::shared_ptr<NeighborTable>(std::move(*n));
  }
  // The last step that can fail: the FIBs of tenants that stay, in place.
  std::erase_if(staged, [&](Tenant* x) { return !std::count(kept.begin(), kept.end(), x); });
  for (auto& tenant : created) {
    tenant->rib.commit();
  }
  // Tenant policy (policy_tables.hpp): kept by the builder only on commit.
  auto policies = policy_->build(c);
  if (!policies) {
    return fail(policies.error());
  }
  for (size_t ti = 0; ti < t->tenants.size(); ++ti) {
    t->tenants[ti].policy = (*policies)[ti].rules;
    t->tenants[ti].isolation = (*policies)[ti].isolation;
    t->tenants[ti].isolation_slot = (*policies)[ti].isolation_slot;
    t->any_policy = t->any_policy || (*policies)[ti].rules != nullptr;
  }
  if (auto r = commitTenants(kept, synchronize); !r) {
    staged.clear();  // commitTenants put the RIBs back itself
    return fail(r.error());
  }

  // Commit: nothing below fails.
  policy_->commit();
  for (auto& tenant : created) {
    std::string name = tenant->rib.name();
    tenants_[name] = std::move(tenant);
  }
  tenant_order_.clear();
  for (const auto& tc : c.tenants) {
    tenant_order_.push_back(tc.name);
  }
  std::erase_if(tenants_, [&](const auto& e) {
    return std::find(tenant_order_.begin(), tenant_order_.end(), e.first) == tenant_order_.end();
  });
  std::erase_if(specs_, [&](const auto& e) {
    return std::find(tenant_order_.begin(), tenant_order_.end(), e.first) == tenant_order_.end();
  });
  for (const auto& [tenant, sources] : input.routes) {
    if (!tenants_.count(tenant)) {
      continue;
    }
    for (const auto& [source, specs] : sources) {
      auto& kept_specs = specs_[tenant][source];
      kept_specs.clear();
      for (const auto& spec : specs) {
        RouteSpec copy = spec;
        copy.prefix = spec.prefix.network();
        kept_specs[copy.prefix] = std::move(copy);
      }
    }
  }
  for (auto& te : t->tenants) {
    const Tenant& tenant = *tenants_.at(te.name);
    te.fib = tenant.fib;
    te.next_hops = tenant.rib.sharedNextHops();
  }
  size_t refused = 0;
  neighbors_->sync(want_neighbors, synchronize, &refused);
  t->neighbors_ = neighbors_;
  line_macs_ = line_macs;
  topology_ = std::move(topo);
  fresh_lines_ = std::move(fresh_lines);
  fresh_tunnels_ = std::move(fresh_tunnels);
  fresh_mapped_ = std::move(fresh_mapped);
  fresh_tenant_lines_ = std::move(fresh_tenant_lines);
  generation_ = t->generation;

  // Receive queues, spread round-robin over the workers.
  t->poll.resize(std::max(1u, input.workers));
  size_t next = 0;
  for (const auto& pc : c.ports) {
    auto it = open_ports.find(pc.name);
    if (it == open_ports.end()) {
      continue;
    }
    for (uint16_t q = 0; q < it->second.rx_queues; ++q) {
      t->poll[next++ % t->poll.size()].push_back({it->second.port_id, q});
    }
    if (it->second.tap_port_id) {  // what the kernel sends out through the port:
      // the TAP has one queue per worker, and the kernel may use any.
      for (uint16_t w = 0; w < t->poll.size(); ++w) {
        t->poll[w].push_back({*it->second.tap_port_id, w});
      }
    }
  }
  return t;
}

void TablesBuilder::clear() {
  tenants_.clear();
  specs_.clear();
  tenant_order_.clear();
  topology_.reset();
  neighbors_.reset();
  line_macs_.clear();
}

Result<bool, std::string> TablesBuilder::apply(std::span<const RouteUpdate> updates,
                                               const TenantFib::Synchronize& synchronize) {
  WriterGuard guard(writing_);
  if (!guard.held()) {
    return unexpected(std::string(kBusy));
  }
  if (!topology_) {
    return unexpected(std::string("no forwarding tables yet"));
  }
  std::vector<Tenant*> staged;
  for (const auto& u : updates) {
    auto it = tenants_.find(u.tenant);
    if (it == tenants_.end()) {
      abortTenants(staged);
      return unexpected("route " + u.prefix.toString() + ": there is no tenant " + u.tenant);
    }
    // What a source (FPM, the plan) sends is checked before it is staged.
    std::string bad;
    if (u.prefix.length > (u.prefix.address.family == config::Family::V4 ? 32 : 128)) {
      bad = "prefix length " + std::to_string(u.prefix.length) + " is beyond its family's";
    } else if (!u.withdraw && u.source != RouteSource::kLocal) {
      for (const auto& v : u.vias) {
        if (v.kind == Via::Kind::kLocal) {
          bad = "only the gateway's own addresses (source local) go to the gateway itself";
        }
      }
    }
    if (!bad.empty()) {
      abortTenants(staged);
      return unexpected("route " + u.prefix.toString() + " of tenant " + u.tenant + ": " + bad);
    }
    Tenant* tenant = it->second.get();
    if (std::find(staged.begin(), staged.end(), tenant) == staged.end()) {
      staged.push_back(tenant);
    }
    auto r = stageRoute(*tenant, *topology_, u.source, u.prefix, u.withdraw ? nullptr : &u.vias,
                        u.distance);
    if (!r) {
      abortTenants(staged);
      return unexpected(r.error());
    }
  }
  if (auto r = commitTenants(staged, synchronize); !r) {
    return r;
  }
  for (const auto& u : updates) {
    auto& by_prefix = specs_[u.tenant][u.source];
    if (u.withdraw) {
      by_prefix.erase(u.prefix.network());
    } else {
      by_prefix[u.prefix.network()] = RouteSpec{u.prefix.network(), u.vias, u.distance};
    }
  }
  return true;
}

Result<bool, std::string> TablesBuilder::updateNeighbors(
    const TablesInput& input, const TenantFib::Synchronize& synchronize) {
  WriterGuard guard(writing_);
  if (!guard.held()) {
    return unexpected(std::string(kBusy));
  }
  if (!neighbors_) {
    return unexpected(std::string("no forwarding tables yet"));
  }
  const auto want = wantedNeighbors(input);
  size_t refused = 0;
  neighbors_->sync(want, synchronize, &refused);
  const auto macs = lineMacs(input, want);
  const bool lines_changed = macs != line_macs_;
  // A full table leaves some neighbours out (neighborsLeftOut); what went
  // in, and a line's changed MAC, still count.
  neighbors_left_out_ = refused;
  return lines_changed;
}

// ------------------------------------------------------------------- views

namespace {

std::string viaText(const NextHopTable& table, const Topology& topo, uint32_t index) {
  const NextHop& nh = table.at(index);
  auto portName = [&](uint16_t id) {
    auto it = topo.port_name.find(id);
    return it == topo.port_name.end() ? std::string("(a port not open)") : it->second;
  };
  switch (nh.kind) {
    case NextHop::Kind::kTunnel: {
      auto it = topo.tunnel_peer.find(nh.tunnel);
      return "peer " + (it == topo.tunnel_peer.end() ? std::string("?") : it->second);
    }
    case NextHop::Kind::kGateway: {
      config::IpAddress a;
      a.family = nh.v6 ? config::Family::V6 : config::Family::V4;
      a.bytes = nh.address;
      return a.toString() + " on " + portName(nh.port);
    }
    case NextHop::Kind::kConnected:
      return "connected " + portName(nh.port);
    case NextHop::Kind::kLocal:
      return "local";
    case NextHop::Kind::kEcmp: {
      std::string s = "ecmp";
      for (unsigned i = 0; i < nh.n_members; ++i) {
        s += (i ? ", " : " ") + viaText(table, topo, nh.members[i]);
      }
      return s;
    }
  }
  return "?";
}

}  // namespace

std::vector<RouteView> TablesBuilder::routes(size_t limit, const RouteFilter& filter) const {
  std::vector<RouteView> out;
  if (!topology_) {
    return out;
  }
  for (const auto& name : tenant_order_) {
    if (!filter.tenant.empty() && filter.tenant != name) {
      continue;
    }
    const Tenant& t = *tenants_.at(name);
    for (const auto& [prefix, cs] : t.rib.routes()) {
      for (size_t i = 0; i < cs.size(); ++i) {
        if (!filter.matches(name, prefix, cs[i].source)) {
          continue;
        }
        if (out.size() >= limit) {
          return out;
        }
        out.push_back({name, prefix.toString(),
                       viaText(t.rib.nextHops(), *topology_, cs[i].next_hop),
                       toString(cs[i].source), cs[i].distance, i == 0});
      }
    }
  }
  return out;
}

std::array<size_t, kRouteSourceCount> TablesBuilder::candidatesBySource() const {
  std::array<size_t, kRouteSourceCount> n{};
  for (const auto& [name, t] : tenants_) {
    for (const auto& [prefix, cs] : t->rib.routes()) {
      for (const auto& c : cs) {
        ++n[static_cast<size_t>(c.source)];
      }
    }
  }
  return n;
}

size_t TablesBuilder::candidateCount(const RouteFilter& filter) const {
  size_t n = 0;
  for (const auto& [name, t] : tenants_) {
    if (!filter.tenant.empty() && filter.tenant != name) {
      continue;
    }
    for (const auto& [prefix, cs] : t->rib.routes()) {
      for (const auto& c : cs) {
        n += filter.matches(name, prefix, c.source) ? 1 : 0;
      }
    }
  }
  return n;
}

size_t TablesBuilder::candidateCount() const {
  size_t n = 0;
  for (const auto& [name, t] : tenants_) {
    for (const auto& [prefix, cs] : t->rib.routes()) {
      n += cs.size();
    }
  }
  return n;
}

size_t TablesBuilder::routeCount() const {
  size_t n = 0;
  for (const auto& [name, t] : tenants_) {
    n += t->rib.routes().size();
  }
  return n;
}

const TenantRib* TablesBuilder::rib(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : &it->second->rib;
}

std::shared_ptr<const TenantFib> TablesBuilder::fib(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : it->second->fib;
}

}  // namespace mcgw::engine
